import Foundation
import LocationCore
import LocationTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@testable import LocationGPX

/// Hostile GPX: external entities, entity bombs, 100,000-deep nesting, 50 MB values, binary noise, and a
/// file cut at every byte. Each input gets a clear `GPXError` naming the file and the place (or, for a cut
/// file, exactly the points fully present before the cut), in bounded time and memory, and never a crash or
/// a hang.
///
/// Every input that could make the reader run away is read in a child process first (`location-test-child --read
/// FILE`), which is killed after a minute: a reader that hangs fails the test instead of hanging the run
/// (`.timeLimit` cannot stop a synchronous parse). Only when the child has finished are the finer checks
/// repeated in this process.
///
/// The child also measures memory: it resets its peak RSS just before the read and reports the growth. The
/// bound asserted is ``memoryBoundKiB`` (40 MiB): below the 50 MB that the largest inputs would need held
/// whole, and far below what an expanded entity bomb needs (gigabytes). Measured: about 2 MiB for most
/// inputs, 18 MiB for a 50 MB attribute or comment (libxml2 buffers up to its 10 MB lookahead limit, then
/// refuses). A control reads a 50 MB file into memory first and must show at least 50 MB of growth, so the
/// figure cannot pass by measuring nothing. Under a sanitizer (whose shadow memory and quarantine inflate
/// RSS) the figures are printed, not asserted.
@Suite(.serialized) struct HostileGPXTests {
    static let memoryBoundKiB = 40 * 1024
    /// Generous for a loaded 2-core machine and sanitizer builds; a normal build reads every input here in
    /// well under a second.
    static let timeBound: Duration = .seconds(30)

    /// Reads `path` in a child process and checks what every hostile input must satisfy there: no crash or
    /// hang, an exit status saying the file read (0) or had an error in it (65), nothing on standard error,
    /// a summary, and peak RSS growth under the bound.
    @discardableResult
    static func readInChild(_ path: String, _ label: String, sourceLocation: SourceLocation = #_sourceLocation)
        throws -> ReaderChild
    {
        let child = try ReaderChild.read(path, timeout: .seconds(60))
        #expect(child.status == 0 || child.status == 65, "\(label): exit status \(child.status)\n\(child.standardError)", sourceLocation: sourceLocation)
        #expect(child.standardError.isEmpty, "\(label): standard error: \(child.standardError.prefix(2000))", sourceLocation: sourceLocation)
        #expect(child.wallTime < timeBound, "\(label): took \(child.wallTime)", sourceLocation: sourceLocation)
        guard let summary = child.summary else {
            Issue.record("\(label): no summary from location-test-child; output: \(child.standardOutput.suffix(500))", sourceLocation: sourceLocation)
            return child
        }
        print("hostile GPX: \(label): \(summary.error?.code ?? "ok"), \(summary.points) points, \(child.growthKiB) KiB peak RSS growth, \(String(format: "%.2f", summary.seconds)) s\(summary.sanitizer.map { " (\($0) sanitizer: memory not asserted)" } ?? "")")
        if child.memoryIsComparable {
            #expect(summary.peakReset, "\(label): the child could not reset its peak RSS", sourceLocation: sourceLocation)
            #expect(child.growthKiB <= memoryBoundKiB, "\(label): peak RSS grew by \(child.growthKiB) KiB", sourceLocation: sourceLocation)
        }
        return child
    }

    /// Writes `text` to a file in `directory`.
    static func write(_ text: String, to directory: String, as name: String) throws -> String {
        let path = "\(directory)/\(name)"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    // MARK: - External entities

    /// Watches files with inotify: whether anything opened or read them since the last call.
    final class FileWatch {
        let fd: Int32

        init(_ paths: [String]) throws {
            fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
            guard fd >= 0 else { throw POSIXError(.EIO) }
            for path in paths where inotify_add_watch(fd, path, UInt32(IN_OPEN | IN_ACCESS)) < 0 {
                throw POSIXError(.ENOENT)
            }
        }

        deinit { close(fd) }

        /// How many open and read events arrived since the last call.
        func events() -> Int {
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            var count = 0
            while true {
                let length = read(fd, &buffer, buffer.count)
                guard length > 0 else { return count }
                var offset = 0
                while offset < length {
                    let nameLength = buffer.withUnsafeBytes {
                        Int($0.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                    }
                    count += 1
                    offset += 16 + nameLength
                }
            }
        }
    }

    /// A TCP listener on a free loopback port that no one should ever connect to.
    final class Listener {
        let fd: Int32
        let port: UInt16

        init() throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                    bind(fd, pointer, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, pointer, &length) == 0
                }
            }
            guard fd >= 0, bound else {
                if fd >= 0 { close(fd) }
                throw POSIXError(.EADDRNOTAVAIL)
            }
            self.fd = fd
            port = UInt16(bigEndian: address.sin_port)
        }

        deinit { close(fd) }

        /// Whether a connection is waiting (someone tried to fetch from us).
        var wasContacted: Bool {
            let connection = accept(fd, nil, nil)
            if connection >= 0 { close(connection) }
            return connection >= 0
        }
    }

    @Test(.timeLimit(.minutes(3))) func externalEntitiesAreNeverFetched() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let secret = "SECRET-\(UUID().uuidString)"
        let secretFile = try Self.write(secret, to: directory, as: "secret.txt")
        let dtd = try Self.write(#"<!ENTITY leak "\#(secret)">"#, to: directory, as: "evil.dtd")
        let pointsFile = try Self.write(#"<wpt lat="9" lon="9"><name>\#(secret)</name></wpt>"#, to: directory, as: "points.xml")
        let watch = try FileWatch([secretFile, dtd, pointsFile])
        let listener = try Listener()
        let server = "http://127.0.0.1:\(listener.port)"

        // The instruments work: reading the secret file shows up, and so does a connection to the listener.
        _ = try String(contentsOfFile: secretFile, encoding: .utf8)
        #expect(watch.events() > 0, "inotify did not see the file being read")
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        address.sin_port = listener.port.bigEndian
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(probe, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        close(probe)
        #expect(listener.wasContacted, "the listener did not see a connection")
        #expect(watch.events() == 0)

        let point = #"<wpt lat="1" lon="2"><name>x</name></wpt>"#
        let documents: [(String, String)] = [
            ("general entity, absolute file URL",
             #"<!DOCTYPE gpx [ <!ENTITY xxe SYSTEM "file://\#(secretFile)"> ]><gpx><wpt lat="1" lon="2"><name>&xxe;</name></wpt></gpx>"#),
            ("general entity, relative path",
             #"<!DOCTYPE gpx [ <!ENTITY xxe SYSTEM "secret.txt"> ]><gpx><wpt lat="1" lon="2"><name>&xxe;</name></wpt></gpx>"#),
            ("entity in an attribute",
             #"<!DOCTYPE gpx [ <!ENTITY xxe SYSTEM "file://\#(secretFile)"> ]><gpx creator="&xxe;">\#(point)</gpx>"#),
            ("parameter entity pulling in declarations",
             #"<!DOCTYPE gpx [ <!ENTITY % ext SYSTEM "file://\#(dtd)"> %ext; ]><gpx><wpt lat="1" lon="2"><name>&leak;</name></wpt></gpx>"#),
            ("external DTD subset",
             #"<!DOCTYPE gpx SYSTEM "file://\#(dtd)"><gpx><wpt lat="1" lon="2"><name>&leak;</name></wpt></gpx>"#),
            ("public identifier",
             #"<!DOCTYPE gpx PUBLIC "-//evil//DTD//EN" "evil.dtd"><gpx><wpt lat="1" lon="2"><name>&leak;</name></wpt></gpx>"#),
            ("entity that would add points",
             #"<!DOCTYPE gpx [ <!ENTITY more SYSTEM "file://\#(pointsFile)"> ]><gpx>\#(point)&more;</gpx>"#),
            ("XInclude",
             #"<gpx xmlns:xi="http://www.w3.org/2001/XInclude">\#(point)<xi:include href="points.xml"/><xi:include href="secret.txt" parse="text"/></gpx>"#),
            ("network entity",
             #"<!DOCTYPE gpx [ <!ENTITY net SYSTEM "\#(server)/secret"> ]><gpx><wpt lat="1" lon="2"><name>&net;</name></wpt></gpx>"#),
            ("network DTD", #"<!DOCTYPE gpx SYSTEM "\#(server)/evil.dtd"><gpx>\#(point)</gpx>"#),
        ]
        for (index, (label, document)) in documents.enumerated() {
            // From a file next to the secret, so that relative references could resolve; in a child process.
            let path = try Self.write(document, to: directory, as: "document-\(index).gpx")
            let child = try Self.readInChild(path, label)
            #expect(!child.standardOutput.contains(secret) && !child.standardError.contains(secret), "\(label): the secret leaked")
            #expect(child.summary.map { $0.error != nil || $0.points == 1 } ?? false, "\(label): \(child.standardOutput)")
            guard child.status >= 0 else { continue }
            for chunkSize in [1 << 18, 7] {
                do {
                    let points = try parse(document, chunkSize: chunkSize)
                    // Read without the entity: exactly the one point written in the document.
                    #expect(points.count == 1 && points.first?.latitude == 1, "\(label): \(points)")
                    #expect(!String(describing: points).contains(secret), "\(label): the secret leaked: \(points)")
                } catch {
                    #expect(!error.description.contains(secret), "\(label): the secret leaked: \(error)")
                }
            }
        }
        #expect(watch.events() == 0, "a file named in an external entity was opened")
        #expect(!listener.wasContacted, "the reader connected to the network")
    }

    // MARK: - Entity bombs

    enum Bomb: String, CaseIterable, Sendable {
        /// Ten levels of ten references each: 10^9 "lol"s, 3 GB of text from under 1 KB.
        case billionLaughs
        /// One 50 KB entity referenced 20,000 times: 1 GB from 110 KB.
        case quadraticBlowup
        /// Entities that expand to elements only, no text: 10^7 empty elements.
        case elementBomb
        /// The billion laughs inside an attribute value, where libxml2 expands them itself.
        case billionLaughsInAnAttribute

        var document: String {
            var laughs = #"<!ENTITY lol0 "lollollollollollollollollollol">"#
            for level in 1...9 {
                laughs += "\n<!ENTITY lol\(level) \"\(String(repeating: "&lol\(level - 1);", count: 10))\">"
            }
            switch self {
            case .billionLaughs:
                return "<!DOCTYPE gpx [\n\(laughs)\n]>\n<gpx><wpt lat=\"1\" lon=\"2\"><desc>&lol9;</desc></wpt></gpx>"
            case .billionLaughsInAnAttribute:
                return "<!DOCTYPE gpx [\n\(laughs)\n]>\n<gpx creator=\"&lol9;\"><wpt lat=\"1\" lon=\"2\"/></gpx>"
            case .quadraticBlowup:
                let references = String(repeating: "&big;", count: 20_000)
                return "<!DOCTYPE gpx [<!ENTITY big \"\(String(repeating: "x", count: 50_000))\">]>\n<gpx><wpt lat=\"1\" lon=\"2\"><desc>\(references)</desc></wpt></gpx>"
            case .elementBomb:
                var declarations = #"<!ENTITY e0 "<x/><x/><x/><x/><x/><x/><x/><x/><x/><x/>">"#
                for level in 1...6 {
                    declarations += "\n<!ENTITY e\(level) \"\(String(repeating: "&e\(level - 1);", count: 10))\">"
                }
                return "<!DOCTYPE gpx [\n\(declarations)\n]>\n<gpx><extensions>&e6;</extensions></gpx>"
            }
        }
    }

    @Test(.timeLimit(.minutes(2)), arguments: Bomb.allCases)
    func entityBombsAreRefused(_ bomb: Bomb) throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let child = try Self.readInChild(try Self.write(bomb.document, to: directory, as: "bomb.gpx"), "\(bomb)")
        #expect(child.summary?.error?.code == "entity-expansion", "\(bomb): \(child.standardOutput)")
        guard child.status >= 0 else { return }

        let start = ContinuousClock.now
        let error = try #require(parseError(bomb.document))
        #expect(start.duration(to: .now) < Self.timeBound)
        #expect(error.code == .entityExpansion, "\(bomb): \(error)")
        #expect(error.line != nil && error.file == "test.gpx", "\(bomb): \(error)")
        #expect(error.message.contains("entit"), "\(bomb): \(error)")
    }

    // MARK: - Deep nesting

    enum Nesting: String, CaseIterable, Sendable {
        case closed, unclosed, insideAPoint, throughAnEntity

        static let depth = 100_000

        var document: String {
            let open = String(repeating: "<a>", count: Self.depth)
            let close = String(repeating: "</a>", count: Self.depth)
            switch self {
            case .closed: return "<gpx>\(open)\(close)</gpx>"
            case .unclosed: return "<gpx>\(open)"
            case .insideAPoint: return #"<gpx><wpt lat="1" lon="2"><extensions>\#(open)\#(close)</extensions></wpt></gpx>"#
            case .throughAnEntity:
                // 10 levels of entities nesting ten elements each: 100 deep in the entity, 100,000 by repetition.
                let entity = String(repeating: "<a>", count: 100) + String(repeating: "</a>", count: 100)
                return "<!DOCTYPE gpx [<!ENTITY deep \"\(entity)\">]><gpx>\(String(repeating: "<b>&deep;", count: 1000))\(String(repeating: "</b>", count: 1000))</gpx>"
            }
        }
    }

    @Test(.timeLimit(.minutes(2)), arguments: Nesting.allCases)
    func deepNestingIsAnErrorAtTheLimit(_ nesting: Nesting) throws {
        let document = nesting.document
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let child = try Self.readInChild(try Self.write(document, to: directory, as: "deep.gpx"), "nesting \(nesting)")
        #expect(child.summary?.error?.code == "malformed-xml")
        guard child.status >= 0 else { return }

        let start = ContinuousClock.now
        let error = try #require(parseError(document))
        #expect(start.duration(to: .now) < Self.timeBound)
        #expect(error.code == .malformedXML, "\(nesting): \(error)")
        #expect(
            error.message.contains("nested more than 256") || error.message.contains("depth"), "\(nesting): \(error)")
        // Found where the 257th level opens (all on line 1), not after reading 100,000 levels.
        #expect(error.line == 1 && (error.column ?? .max) < 3_000, "\(nesting): \(error)")
    }

    // MARK: - 50 MB values

    enum Huge: String, CaseIterable, Sendable {
        case unknownAttribute, latitude, rootAttribute, keptText, ignoredText, comment

        /// The document around a 50 MB run of `filler`, as the head, the filler byte and the tail.
        var parts: (head: String, filler: UInt8, tail: String) {
            switch self {
            case .unknownAttribute: (#"<gpx><wpt lat="1" lon="2" note=""#, UInt8(ascii: "A"), #""/></gpx>"#)
            case .latitude: (#"<gpx><wpt lon="2" lat="1."#, UInt8(ascii: "0"), #"1"/></gpx>"#)
            case .rootAttribute: (#"<gpx creator=""#, UInt8(ascii: "A"), #""><wpt lat="1" lon="2"/></gpx>"#)
            case .keptText: (#"<gpx><wpt lat="1" lon="2"><name>"#, UInt8(ascii: "n"), "</name></wpt></gpx>")
            case .ignoredText: (#"<gpx><wpt lat="1" lon="2"><desc>"#, UInt8(ascii: "d"), "</desc></wpt></gpx>")
            case .comment: (#"<gpx><wpt lat="1" lon="2"/><!--"#, UInt8(ascii: "c"), "--></gpx>")
            }
        }

        /// What the reader must make of it: an error code, or (for text it does not keep) the one point.
        var expected: String {
            switch self {
            case .ignoredText: "ok"
            case .keptText: "invalid-value"
            default: "malformed-xml"
            }
        }
    }

    static let hugeSize = 50_000_000

    /// Writes the document of `huge` with a 50 MB value to `directory`.
    static func writeHuge(_ huge: Huge, in directory: String) throws -> String {
        let path = "\(directory)/\(huge).gpx"
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let file = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? file.close() }
        let (head, filler, tail) = huge.parts
        try file.write(contentsOf: Data(head.utf8))
        let block = Data(repeating: filler, count: 1 << 20)
        var written = 0
        while written < hugeSize {
            let count = min(block.count, hugeSize - written)
            try file.write(contentsOf: block.prefix(count))
            written += count
        }
        try file.write(contentsOf: Data(tail.utf8))
        return path
    }

    @Test(.timeLimit(.minutes(3)), arguments: Huge.allCases)
    func fiftyMegabyteValuesAreBounded(_ huge: Huge) throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = try Self.writeHuge(huge, in: directory)
        let child = try Self.readInChild(path, "50 MB \(huge)")
        let summary = try #require(child.summary)
        #expect((summary.error?.code ?? "ok") == huge.expected, "\(huge): \(child.standardOutput.suffix(1000))")
        if let error = summary.error {
            #expect(error.line >= 1 && error.column >= 1, "\(huge): \(error.description)")
            #expect(error.description.hasPrefix(path + ":"), "\(huge): \(error.description)")
        } else {
            #expect(summary.points == 1)
        }
    }

    @Test(.timeLimit(.minutes(2))) func theMemoryFigureSeesMemoryInUse() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let child = try ReaderChild.read(try Self.writeHuge(.unknownAttribute, in: directory), intoMemory: true)
        let summary = try #require(child.summary, "\(child.standardError)")
        #expect(summary.heldBytes > Self.hugeSize)
        print("hostile GPX: control, 50 MB file held in memory: \(child.growthKiB) KiB peak RSS growth")
        if child.memoryIsComparable {
            #expect(child.growthKiB >= Self.hugeSize / 1024, "holding 50 MB showed only \(child.growthKiB) KiB")
        }
    }

    // MARK: - Binary noise

    static let noise: [(String, [UInt8])] = {
        var random = SplitMix64(seed: 0x6E6F_6973_65)
        func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) } }
        return [
            ("1 random byte", bytes(1)), ("3 random bytes", bytes(3)), ("100 random bytes", bytes(100)),
            ("4 KiB random", bytes(4096)), ("64 KiB random", bytes(65536)), ("1 MiB random", bytes(1 << 20)),
            ("1 MiB of zeros", [UInt8](repeating: 0, count: 1 << 20)),
            ("1 MiB of 0xFF", [UInt8](repeating: 0xFF, count: 1 << 20)),
            ("UTF-8 BOM then noise", [0xEF, 0xBB, 0xBF] + bytes(4096)),
            ("UTF-16 LE BOM then noise", [0xFF, 0xFE] + bytes(4096)),
            ("UTF-16 BE BOM then noise", [0xFE, 0xFF] + bytes(4096)),
            ("UTF-32 BOM then noise", [0x00, 0x00, 0xFE, 0xFF] + bytes(4096)),
            ("root then noise", Array("<gpx>".utf8) + bytes(4096)),
            ("declaration then noise", Array(#"<?xml version="1.0" encoding="ISO-8859-1"?>"#.utf8) + bytes(4096)),
            ("a point then noise", Array(#"<gpx><wpt lat="1" lon="2"/>"#.utf8) + bytes(4096)),
            ("noise in a value", Array(#"<gpx><wpt lat="1" lon="2"><ele>"#.utf8) + bytes(4096) + Array("</ele></wpt></gpx>".utf8)),
        ]
    }()

    @Test(.timeLimit(.minutes(2))) func binaryNoiseIsAClearError() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for (label, bytes) in Self.noise {
            if bytes.count >= 1 << 20 {
                let path = "\(directory)/noise.gpx"
                try Data(bytes).write(to: URL(fileURLWithPath: path))
                guard try Self.readInChild(path, label).status >= 0 else { continue }
            }
            for chunkSize in [1 << 18, 13] {
                let start = ContinuousClock.now
                let reader = GPXReader(bytes: bytes, name: "noise.gpx", chunkSize: chunkSize)
                var points: [GPXPoint] = []
                do {
                    while let point = try reader.next() { points.append(point) }
                    Issue.record("\(label): noise read as GPX, \(points.count) points")
                } catch {
                    #expect(
                        [.empty, .malformedXML, .truncated, .notGPX].contains(error.code) && !error.message.isEmpty,
                        "\(label): \(error)")
                    #expect(error.file == "noise.gpx")
                    #expect(error.code == .empty || (error.line ?? 0) >= 1, "\(label): \(error)")
                }
                // Only the point written before the noise, if any.
                #expect(points.count <= 1 && points.allSatisfy { $0.latitude == 1 }, "\(label): \(points)")
                #expect(start.duration(to: .now) < Self.timeBound, "\(label)")
            }
        }
    }

    // MARK: - Truncation

    /// A small file with a bit of everything (declaration, DOCTYPE with an entity, comment, waypoint,
    /// route, track, CDATA, a character outside ASCII, the loc extension, a self-closing point), and the
    /// end-of-point markers in order: a point is fully present once its marker is.
    static let truncationDocument = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE gpx [ <!ENTITY home "Home &amp; garden"> ]>
        <gpx version="1.1" creator="test" xmlns="http://www.topografix.com/GPX/1/1" \
        xmlns:loc="https://swift-location.dev/xmlns/gpx-location/1">
          <!-- a comment -->
          <wpt lat="47.5" lon="8.25"><ele>400.5</ele><name>&home; ☺</name></wpt>
          <rte><rtept lat="47.6" lon="8.3"><time>2024-05-01T06:00:00Z</time></rtept></rte>
          <trk><name>t</name><trkseg>
            <trkpt lat="47.7" lon="8.35"><ele>401</ele><time>2024-05-01T06:00:01.5Z</time><extensions><loc:speed>1.5</loc:speed></extensions></trkpt>
            <trkpt lat="-47.8" lon="-8.4"><time>2024-05-01T07:00:02+01:00</time><name><![CDATA[a<b]]></name></trkpt>
            <trkpt lon="8.45" lat="47.9"/>
          </trkseg></trk>
        </gpx>

        """
    static let pointEnds = ["</wpt>", "</rtept>", "</trkpt>", "</trkpt>", #"lat="47.9"/>"#]

    /// The offsets in `units` just past each point's end marker, in order (in code units of the encoding).
    static func pointEndOffsets<Units: Collection>(_ units: Units, _ marker: (String) -> [Units.Element]) -> [Int]
    where Units.Element: Equatable, Units.Index == Int {
        var offsets: [Int] = []
        var from = units.startIndex
        for end in pointEnds {
            let needle = marker(end)
            var index = from
            while index + needle.count <= units.endIndex, !units[index..<index + needle.count].elementsEqual(needle) {
                index += 1
            }
            offsets.append(index + needle.count)
            from = index + needle.count
        }
        return offsets
    }

    @Test(.timeLimit(.minutes(3)), arguments: ["UTF-8", "UTF-16LE"])
    func truncationAtEveryByte(_ encoding: String) throws {
        let text = Self.truncationDocument
        let bytes: [UInt8]
        let ends: [Int]
        let utf8 = Array(text.utf8)
        if encoding == "UTF-8" {
            bytes = utf8
            ends = Self.pointEndOffsets(utf8) { Array($0.utf8) }
        } else {
            let declared = text.replacingOccurrences(of: #"encoding="UTF-8""#, with: #"encoding="UTF-16""#)
            let units = Array(declared.utf16)
            bytes = [0xFF, 0xFE] + units.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
            ends = Self.pointEndOffsets(units) { Array($0.utf16) }.map { 2 + 2 * $0 }
        }
        let newlines = bytes.indices.filter {
            encoding == "UTF-8" ? bytes[$0] == 10 : $0 >= 2 && $0 % 2 == 0 && bytes[$0] == 10 && bytes[$0 + 1] == 0
        }
        let all = try parse(bytes: bytes)
        #expect(all.count == Self.pointEnds.count)
        let rootEnd = bytes.count - (encoding == "UTF-8" ? 1 : 2)  // the document's last newline

        var outcomes: [String: Int] = [:]
        for length in 0...bytes.count {
            let prefix = Array(bytes.prefix(length))
            let present = ends.filter { $0 <= length }.count
            for chunkSize in [1 << 18, 1] {
                let reader = GPXReader(bytes: prefix, name: "cut.gpx", chunkSize: chunkSize)
                var points: [GPXPoint] = []
                var failure: GPXError?
                do {
                    while let point = try reader.next() { points.append(point) }
                } catch {
                    failure = error
                }
                let place = "\(encoding), cut at byte \(length) of \(bytes.count), chunks of \(chunkSize)"
                // Exactly the points fully present, with every value as in the whole file.
                #expect(points == Array(all.prefix(present)), "\(place): \(points.count) points, \(present) present")
                if length >= rootEnd {
                    #expect(failure == nil, "\(place): \(String(describing: failure))")
                    continue
                }
                guard let failure else {
                    Issue.record("\(place): a cut file read without error")
                    continue
                }
                outcomes[failure.code.rawValue, default: 0] += 1
                let emptyPrefix = length == 0 || (encoding != "UTF-8" && length == 2)  // nothing, or only the BOM
                #expect(
                    failure.code == .truncated || (emptyPrefix && failure.code == .empty),
                    "\(place): \(failure)")
                #expect(failure.file == "cut.gpx" && failure.message.contains("truncated") || failure.code == .empty, "\(place): \(failure)")
                if failure.code == .truncated {
                    // The place: a line and column within the part that is there.
                    let lines = newlines.filter { $0 < length }.count + 1
                    #expect((failure.line ?? 0) >= 1 && (failure.line ?? .max) <= lines + 1, "\(place): \(failure), \(lines) lines")
                    #expect((failure.column ?? 0) >= 1, "\(place): \(failure)")
                }
            }
        }
        print("hostile GPX: truncation at every byte (\(encoding), \(bytes.count) bytes, whole and 1-byte chunks): \(outcomes.sorted { $0.key < $1.key })")
    }
}
