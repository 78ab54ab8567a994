import CLibXML2

#if canImport(Glibc)
    import Glibc
#endif

/// The floor for GPX parsing (the benchmarks' peer that only counts; here because CLibXML2 is this
/// package's own module): libxml2's SAX2 push parser fed 256 KiB chunks, with C callbacks that only
/// count `<trkpt>` start tags. No attribute, text or time is looked at.
public enum LibXML2CountReader {
    /// Why the file could not be counted.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// Counts the track points of the file at `path`.
    public static func count(path: String) throws -> Int {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw Failure("cannot open \(path)") }
        defer { close(fd) }
        var counter = 0
        var sax = xmlSAXHandler()
        sax.initialized = XML_SAX2_MAGIC
        sax.startElementNs = { user, localname, _, _, _, _, _, _, _ in
            // "trkpt" is 5 bytes + NUL; compare without building a string.
            guard let name = localname else { return }
            if name[0] == 0x74, name[1] == 0x72, name[2] == 0x6B, name[3] == 0x70, name[4] == 0x74, name[5] == 0 {
                user!.assumingMemoryBound(to: Int.self).pointee += 1
            }
        }
        return try withUnsafeMutablePointer(to: &counter) { pointer -> Int in
            guard let context = xmlCreatePushParserCtxt(&sax, pointer, nil, 0, path) else {
                throw Failure("libxml2 could not create a parser")
            }
            defer { xmlFreeParserCtxt(context) }
            xmlCtxtUseOptions(context, Int32(XML_PARSE_NONET.rawValue))
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: 256 * 1024)
            defer { buffer.deallocate() }
            while true {
                let count = read(fd, buffer, 256 * 1024)
                guard count >= 0 else { throw Failure("cannot read \(path)") }
                let status = xmlParseChunk(context, buffer, Int32(count), count == 0 ? 1 : 0)
                guard status == 0 else { throw Failure("libxml2 error \(status) in \(path)") }
                if count == 0 { break }
            }
            return pointer.pointee
        }
    }
}
