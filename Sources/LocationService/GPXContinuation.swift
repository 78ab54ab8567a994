import LocationGPX

#if canImport(Glibc)
    import Glibc
#endif

/// Where an existing GPX file is continued by `--append`: found by reading its head and its tail, never the
/// whole file.
///
/// A complete document is continued in place of its `</gpx>` (spaces inside the tag, whitespace and
/// comments after it are allowed). A document a logger left cut inside a point (a full disk, a power cut
/// in the middle of a write) is continued after its last whole `</trkpt>`: the broken rest, at most
/// ``maximumCutLength`` bytes, is dropped and the open segment and track are closed first, so that one bad
/// moment does not make the file refuse every later append.
enum GPXContinuation: Equatable {
    /// The file's `</gpx>` begins at this offset.
    case closingTag(at: Int)
    /// The file was cut: its last whole point ends at this offset, and this many bytes follow it.
    case afterLastPoint(end: Int, cut: Int)

    /// The most that is dropped after the last whole point: about ten points. Anything longer is not a
    /// write that was cut, and the file is refused instead.
    static let maximumCutLength = 8 * 1024
    /// How much of the head is read to see that the file is GPX at all.
    private static let headLength = 4096
    private static let chunk = 64 * 1024

    /// Where `fd` (a regular file of `size` bytes, `size > 0`) can be continued, or `nil` when it is not
    /// a GPX document this can continue.
    static func find(in fd: Int32, size: Int) -> GPXContinuation? {
        guard let head = read(fd, from: 0, count: min(size, headLength)), contains(head, "<gpx") else { return nil }
        var end = size
        // Whitespace and comments after the document, in chunks from the end.
        while end > 0 {
            guard let tail = read(fd, from: max(0, end - chunk), count: min(end, chunk)) else { return nil }
            var index = tail.count
            while index > 0, isSpace(tail[index - 1]) { index -= 1 }
            if index == 0 {
                end -= tail.count
                continue
            }
            end -= tail.count - index
            let text = Array(tail[..<index])
            if text.count >= 3, text.suffix(3).elementsEqual("-->".utf8) {
                guard let open = lastRange(of: "<!--", in: text) else { break }
                end -= text.count - open
                continue
            }
            break
        }
        guard end > 0, let tail = read(fd, from: max(0, end - chunk), count: min(end, chunk)) else { return nil }
        let base = end - tail.count
        // `</gpx>` with optional whitespace before the `>`.
        if tail.last == UInt8(ascii: ">") {
            var index = tail.count - 1
            while index > 0, isSpace(tail[index - 1]) { index -= 1 }
            let name = Array("</gpx".utf8)
            if index >= name.count, tail[(index - name.count)..<index].elementsEqual(name) {
                return .closingTag(at: base + index - name.count)
            }
        }
        // A document cut after its last whole point. Whatever follows it must be short and must not
        // close the document (a document closed and followed by something else is not ours to cut).
        guard let point = lastRange(of: "</trkpt>", in: tail) else { return nil }
        let pointEnd = point + "</trkpt>".utf8.count
        let rest = tail[pointEnd...]
        // A closing `</gpx` cut before its `>` is a cut like any other.
        if let closing = lastRange(of: "</gpx", in: Array(rest)) {
            guard !rest.dropFirst(closing).contains(UInt8(ascii: ">")) else { return nil }
        }
        guard rest.count <= maximumCutLength else { return nil }
        return .afterLastPoint(end: base + pointEnd, cut: rest.count)
    }

    /// Whether the root of the document in `fd` declares the location extension's namespace under the
    /// prefix the writer uses (as every document this project writes does); read from its head.
    static func rootDeclaresExtensions(in fd: Int32, size: Int) -> Bool {
        guard let head = read(fd, from: 0, count: min(size, headLength)) else { return false }
        // The root's own start tag: the first `<gpx` followed by white space or `>`, to its `>` (a
        // declaration on a track an earlier append added, or in a comment, does not count).
        let name = Array("<gpx".utf8)
        var start = 0
        while start + name.count < head.count {
            if head[start..<(start + name.count)].elementsEqual(name), isSpace(head[start + name.count]) || head[start + name.count] == UInt8(ascii: ">") {
                guard let end = head[start...].firstIndex(of: UInt8(ascii: ">")) else { return false }
                return contains(Array(head[start..<end]), "xmlns:\(GPXNamespace.locationPrefix)=\"\(GPXNamespace.location)\"")
            }
            start += 1
        }
        return false
    }

    /// The tags that close what was open at the last whole point, before a new track.
    static let closingAfterLastPoint = Array("\n    </trkseg>\n  </trk>\n".utf8)

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private static func read(_ fd: Int32, from offset: Int, count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let result = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, count - done, off_t(offset + done)) }
            if result < 0, errno == EINTR { continue }
            guard result > 0 else { return nil }
            done += result
        }
        return bytes
    }

    private static func contains(_ bytes: [UInt8], _ text: String) -> Bool {
        lastRange(of: text, in: bytes) != nil
    }

    /// Where the last occurrence of `text` in `bytes` begins.
    private static func lastRange(of text: String, in bytes: [UInt8]) -> Int? {
        let needle = Array(text.utf8)
        guard bytes.count >= needle.count else { return nil }
        var start = bytes.count - needle.count
        while start >= 0 {
            if bytes[start] == needle[0], bytes[start..<(start + needle.count)].elementsEqual(needle) { return start }
            start -= 1
        }
        return nil
    }
}
