import Foundation
import LocationCore
import Testing

@testable import LocationGPX

/// Thousands of deterministic mutations of small GPX files: the reader (and the replay schedule on top of
/// it) must return points or throw a `GPXError`, never crash or hang.
///
/// `GPX_FUZZ_CASES` sets the number of cases (default 5000), `GPX_FUZZ_SEED` the seed; a failure message
/// names the case, which the same seed reproduces.
@Suite struct FuzzTests {
    static let cases = ProcessInfo.processInfo.environment["GPX_FUZZ_CASES"].flatMap { Int($0) } ?? 5000
    static let seed = ProcessInfo.processInfo.environment["GPX_FUZZ_SEED"].flatMap { UInt64($0) } ?? 0x6770_7866_757A_7A31

    /// Small seed documents: built in, plus the small real files when they are present.
    static let seeds: [[UInt8]] = {
        var seeds: [String] = [
            gpx11(
                track([[trkpt(47, 8, t(0), ele: 400), trkpt(47.001, 8.001, t(1.5)), trkpt(47.002, 8, t(1.5))], []])
                    + #"<rte><rtept lat="1" lon="2"><name>a &amp; b</name></rtept></rte>"#),
            #"<gpx version="1.0" xmlns="http://www.topografix.com/GPX/1/0"><wpt lat="1.5" lon="-2.25"><ele>3</ele><time>2003-06-29T00:00:00</time><speed>3</speed><fix>3d</fix><sat>7</sat></wpt></gpx>"#,
            """
            <?xml version="1.0" encoding="ISO-8859-1"?>
            <!DOCTYPE gpx [ <!ENTITY e "entity"> ]>
            <gpx xmlns:g="http://www.garmin.com/xmlschemas/TrackPointExtension/v1"><trk><trkseg>
            <trkpt lon="8.1" lat="47.1"><time>2024-05-01T06:00:00.123+01:00</time><extensions><g:TrackPointExtension><g:hr>120</g:hr></g:TrackPointExtension></extensions><name>&e;<![CDATA[<x>]]></name></trkpt>
            </trkseg></trk></gpx>
            """,
        ]
        if let directory = TestData.directory {
            for name in [
                "gpxpy__gpx1.0_with_all_fields.gpx", "gpxpy__gpx1.1_with_all_fields.gpx", "gpxpy__track_with_speed.gpx",
                "gpxpy__unicode_with_bom.gpx", "gpxpy__track-with-empty-segment.gpx", "gpxpy__route.gpx",
            ] {
                if let text = try? String(contentsOfFile: "\(directory)/\(name)", encoding: .utf8) { seeds.append(text) }
            }
        }
        return seeds.map { Array($0.utf8) }
    }()

    /// Fragments worth splicing in: structure, entities, encodings, numbers and times at their limits.
    static let tokens: [[UInt8]] = [
        "<", ">", "</", "/>", "\"", "'", "&", "&amp;", "&#0;", "&#x110000;", "&#xD800;", "&lt;", "&e;", "&undefined;",
        "<![CDATA[", "]]>", "<!--", "-->", "<?xml version=\"1.0\"?>", "<?pi?>",
        "<!DOCTYPE gpx [<!ENTITY e \"&e;\">]>",
        "<!DOCTYPE gpx [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\"><!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\">]>",
        "&c;&c;&c;&c;", "<!DOCTYPE gpx SYSTEM \"file:///etc/passwd\">", "<!ENTITY x SYSTEM \"file:///etc/hostname\">",
        "<trkpt lat=\"1\" lon=\"2\">", "</trkpt>", "<trk><trkseg>", "</trkseg></trk>", "<wpt lat=\"91\" lon=\"0\"/>",
        "<rte>", "<rtept lat=\"-90\" lon=\"180\"/>", "<ele>", "</ele>", "<time>", "</time>", "<sat>", "<fix>pps</fix>",
        "lat=\"", "lon=\"", "NaN", "1e999", "-0", "0x1p3", "123456789012345678901234567890.5", ".", "-",
        "2024-02-30T00:00:00Z", "9999-12-31T23:59:60.999999999999Z", "2024-05-01 06:00:00+14:00", "T", "Z",
        "xmlns=\"http://www.topografix.com/GPX/1/1\"", "xmlns:loc=\"https://swift-location.dev/xmlns/gpx-location/1\"",
        "<loc:simulated>maybe</loc:simulated>", "<loc:speed>1</loc:speed>", "<extensions>", "</extensions>",
        "\u{0}", "\u{1}", "\u{FEFF}", "\r\n", "\t", "é", "☺", "\u{10FFFF}",
    ].map { Array($0.utf8) } + [[0xFF, 0xFE], [0xFE, 0xFF], [0xEF, 0xBB, 0xBF], [0xC3], [0xE2, 0x98], [0x80], [0xFF]]

    /// Values to put where a value goes (text between tags, or an attribute's value).
    static let values: [[UInt8]] = [
        "", " ", "0", "-0", "90", "90.0000001", "-180", "180", "181", "1e2", "1e-400", "1e400", "NaN", "inf", "+5", "--5",
        "0.123456789012345678901234567890", "3d", "2d", "none", "dgps", "x", "true", "false", "-1", "4294967296",
        "99999999999999999999", "2024-05-01T06:00:00Z", "2024-05-01T06:00:00.1234567Z", "2003-06-29T00:00:00",
        "2024-05-01T06:00:00+25:00", "2024-02-29T00:00:00Z", "2023-02-29T00:00:00Z", "0000-01-01T00:00:00Z",
        "&amp;", "&#65;", "a&b", "<", "\u{0}",
    ].map { Array($0.utf8) }

    static func mutate(_ input: [UInt8], _ random: inout SplitMix64) -> [UInt8] {
        var bytes = input
        for _ in 0..<(1 + Int(random.next() % 4)) {
            let position = bytes.isEmpty ? 0 : Int(random.next() % UInt64(bytes.count + 1))
            // Half of the mutations keep the markup and change a value; the rest may break anything.
            if random.next() % 2 == 0, let open = bytes[position...].firstIndex(where: { $0 == 0x3E || $0 == 0x22 }) {
                let close = bytes[(open + 1)...].firstIndex(where: { $0 == 0x3C || $0 == 0x22 }) ?? bytes.count
                bytes.replaceSubrange((open + 1)..<close, with: values[Int(random.next() % UInt64(values.count))])
                continue
            }
            switch random.next() % 9 {
            case 0 where !bytes.isEmpty:  // flip bits of one byte
                let index = min(position, bytes.count - 1)
                bytes[index] ^= UInt8(truncatingIfNeeded: 1 << (random.next() % 8))
            case 1 where !bytes.isEmpty:  // replace a byte with anything
                bytes[min(position, bytes.count - 1)] = UInt8(truncatingIfNeeded: random.next())
            case 2:  // insert a token
                bytes.insert(contentsOf: tokens[Int(random.next() % UInt64(tokens.count))], at: position)
            case 3 where !bytes.isEmpty:  // delete a stretch
                let count = min(Int(random.next() % 64) + 1, bytes.count - min(position, bytes.count - 1))
                bytes.removeSubrange(min(position, bytes.count - 1)..<min(position, bytes.count - 1) + count)
            case 4:  // truncate
                bytes.removeSubrange(position...)
            case 5 where !bytes.isEmpty:  // duplicate a stretch somewhere else
                let start = Int(random.next() % UInt64(bytes.count))
                let end = min(bytes.count, start + Int(random.next() % 200) + 1)
                let slice = Array(bytes[start..<end])
                bytes.insert(contentsOf: slice, at: Int(random.next() % UInt64(bytes.count + 1)))
            case 6:  // a burst of nesting
                let depth = Int(random.next() % 400)
                bytes.insert(contentsOf: Array(String(repeating: "<a>", count: depth).utf8), at: position)
            case 7 where !bytes.isEmpty:  // swap two bytes
                let other = Int(random.next() % UInt64(bytes.count))
                bytes.swapAt(min(position, bytes.count - 1), other)
            default:  // splice from another seed
                let donor = seeds[Int(random.next() % UInt64(seeds.count))]
                guard !donor.isEmpty else { break }
                let start = Int(random.next() % UInt64(donor.count))
                let end = min(donor.count, start + Int(random.next() % 300) + 1)
                bytes.insert(contentsOf: donor[start..<end], at: position)
            }
        }
        return bytes
    }

    @Test(.timeLimit(.minutes(5)))
    func mutatedFilesNeverCrashOrHang() throws {
        var random = SplitMix64(seed: Self.seed)
        var outcomes: [String: Int] = [:]
        var slowest: (Duration, Int) = (.zero, -1)
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for index in 0..<Self.cases {
            let seed = Self.seeds[Int(random.next() % UInt64(Self.seeds.count))]
            let input = Self.mutate(seed, &random)
            let chunkSize = [1, 2, 3, 7, 64, 4096, 1 << 18][Int(random.next() % 7)]
            let start = ContinuousClock.now
            do {
                let points = try parse(bytes: input, chunkSize: chunkSize, name: "case-\(index).gpx")
                #expect(points.count <= input.count, "case \(index)")
                for point in points {
                    #expect(abs(point.latitude) <= 90 && abs(point.longitude) <= 180, "case \(index)")
                }
                outcomes["ok", default: 0] += 1
            } catch {
                #expect(error.file == "case-\(index).gpx", "case \(index): \(error)")
                outcomes[error.code.rawValue, default: 0] += 1
            }
            // Every tenth case also goes through the replay schedule, from a file.
            if index % 10 == 0 {
                let path = "\(directory)/case.gpx"
                _ = FileManager.default.createFile(atPath: path, contents: Data(input))
                if let planner = try? ReplayPlanner(
                    path: path, options: .init(loop: true, untimedSpeed: 1000), startDate: replayStart)
                {
                    var steps = 0
                    while steps < 200, let step = try? planner.next() {
                        #expect(step.trackTime >= .zero, "case \(index)")
                        steps += 1
                    }
                }
            }
            let elapsed = start.duration(to: .now)
            if elapsed > slowest.0 { slowest = (elapsed, index) }
            // Generous, for sanitizer builds; a normal build's slowest case takes about 0.2 s.
            #expect(elapsed < .seconds(5), "case \(index) took \(elapsed)")
        }
        print("GPX fuzz: \(Self.cases) cases, seed \(Self.seed): \(outcomes.sorted { $0.key < $1.key }); slowest case \(slowest.1) took \(slowest.0)")
        #expect(outcomes["ok", default: 0] > Self.cases / 50, "mutations should not all be fatal")
    }
}
