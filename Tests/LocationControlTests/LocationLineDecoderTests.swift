import Foundation
import LocationCore
import LocationTesting
import Testing

@testable import LocationControl

/// The direct reader of location lines must mean exactly what `JSONDecoder` means, or step aside.
@Suite("Location lines read without JSONDecoder")
struct LocationLineDecoderTests {
    /// What a line meant before the direct reader: `JSONDecoder`, or `nil` when it refused the line.
    static func slow(_ line: [UInt8]) -> Location? {
        try? JSONDecoder().decode(Location.self, from: Data(line))
    }

    static func randomLocation(_ random: inout SplitMix64) -> Location {
        func maybe(_ value: @autoclosure () -> Double) -> Double? {
            random.next() % 3 == 0 ? nil : value()
        }
        let awkward: [Double] = [0, -0.0, 1e-300, 1e300, -1e15, 1e15 + 1, 0.1, 1 / 3, 123456789.125, .leastNonzeroMagnitude]
        func number() -> Double {
            random.next() % 4 == 0 ? awkward[Int(random.next() % UInt64(awkward.count))] : (random.unit() - 0.5) * 1e4
        }
        let sources = [nil, "gpsd localhost:2947", "walk.gpx", "quote \" and \\ backslash", "ünïcödé", "tab\there"]
        return Location(
            latitude: (random.unit() - 0.5) * 180, longitude: (random.unit() - 0.5) * 360,
            altitude: maybe(number()), ellipsoidalAltitude: maybe(number()), horizontalAccuracy: maybe(abs(number())),
            verticalAccuracy: maybe(abs(number())), speed: maybe(abs(number())), speedAccuracy: maybe(abs(number())),
            course: maybe(random.unit() * 360), courseAccuracy: maybe(random.unit() * 180), climb: maybe(number()),
            timestamp: Date(timeIntervalSince1970: (random.unit() * 4e9).rounded() / Double([1, 10, 1000, 1_000_000][Int(random.next() % 4)])),
            fixMode: [nil, .twoDimensional, .threeDimensional][Int(random.next() % 3)],
            correctionStatus: random.next() % 2 == 0 ? nil : CorrectionStatus.allCases[Int(random.next() % UInt64(CorrectionStatus.allCases.count))],
            satellitesUsed: random.next() % 2 == 0 ? nil : Int(random.next() % 40),
            satellitesVisible: random.next() % 2 == 0 ? nil : Int(random.next() % 80),
            source: sources[Int(random.next() % UInt64(sources.count))], isSimulated: random.next() % 2 == 0,
            hdop: maybe(random.unit() * 20), vdop: maybe(random.unit() * 20), pdop: maybe(random.unit() * 20))
    }

    @Test("every line the encoder writes reads back to the same fix, the same as JSONDecoder reads it (20,000 random fixes)")
    func readsWhatTheEncoderWrites() throws {
        var random = SplitMix64(seed: 22)
        var direct = 0
        for _ in 0..<20_000 {
            let location = Self.randomLocation(&random)
            var line: [UInt8] = []
            JSONLineEncoder.append(.locations([location], .live), to: &line)
            line.removeLast()  // the newline
            let read = LocationLineDecoder.location(line)
            if read != nil { direct += 1 }
            #expect(read == nil || read == Self.slow(line), "\(String(decoding: line, as: UTF8.self))")
            #expect(try LocationEventDecoder.frame(line) == EventFrame(.locations([try #require(Self.slow(line))], .live)))
        }
        // These random fixes are awkward on purpose (escapes, exponents); a receiver's fixes all go direct.
        #expect(direct >= 20_000 / 3, "\(direct) of 20,000 read directly")
        for location in LocationFixtures.walk(count: 1_000) {
            var line: [UInt8] = []
            JSONLineEncoder.append(.locations([location], .live), to: &line)
            line.removeLast()
            #expect(LocationLineDecoder.location(line) == location)
        }
    }

    @Test("a damaged or unusual line is read as JSONDecoder reads it, or refused the same way (50,000 mutations)")
    func damagedLinesMeanWhatTheyMeantBefore() throws {
        var random = SplitMix64(seed: 23)
        let junk = Array(#"{}[]",:.-+eE0123456789 \tntrufalse"#.utf8) + [0, 0xff, 0x5c]
        var disagreements: [String] = []
        for _ in 0..<50_000 {
            var line: [UInt8] = []
            JSONLineEncoder.append(.locations([Self.randomLocation(&random)], .live), to: &line)
            line.removeLast()
            switch random.next() % 4 {
            case 0: line[Int(random.next() % UInt64(line.count))] = junk[Int(random.next() % UInt64(junk.count))]
            case 1: line.removeLast(Int(random.next() % UInt64(line.count)))
            case 2: line.insert(junk[Int(random.next() % UInt64(junk.count))], at: Int(random.next() % UInt64(line.count)))
            default: line.remove(at: Int(random.next() % UInt64(line.count)))
            }
            let direct = LocationLineDecoder.location(line)
            if let direct, direct != Self.slow(line), disagreements.count < 5 {
                disagreements.append(String(decoding: line, as: UTF8.self))
            }
        }
        #expect(disagreements.isEmpty, "read differently from JSONDecoder: \(disagreements)")
    }

    @Test("repeated or unknown keys, escapes, other types and impossible coordinates are left to JSONDecoder")
    func leavesTheUnusualToJSONDecoder() {
        let lines = [
            #"{"type":"location","latitude":1,"latitude":2,"longitude":3,"timestamp":"2024-05-01T06:00:00Z","isSimulated":false}"#,
            #"{"type":"location","latitude":1,"longitude":3,"extra":1,"timestamp":"2024-05-01T06:00:00Z","isSimulated":false}"#,
            #"{"type":"location","latitude":1,"longitude":3,"timestamp":"2024-05-01T06:00:00Z","source":"a\"b","isSimulated":false}"#,
            #"{"type":"location","latitude":"1","longitude":3,"timestamp":"2024-05-01T06:00:00Z","isSimulated":false}"#,
            #"{"type":"location","latitude":91,"longitude":3,"timestamp":"2024-05-01T06:00:00Z","isSimulated":false}"#,
            #"{"type":"location","latitude":1,"longitude":3,"timestamp":"2024-05-01T06:00:00Z","satellitesUsed":3.5,"isSimulated":false}"#,
            #"{"type":"location","latitude":1e400,"longitude":3,"timestamp":"2024-05-01T06:00:00Z","isSimulated":false}"#,
            #"{"type":"location","latitude":01,"longitude":3,"timestamp":"2024-05-01T06:00:00Z","isSimulated":false}"#,
            #"{"type":"location","latitude":1,"longitude":3,"timestamp":"2024-05-01T06:00:00Z","isSimulated":false} "#,
            // Below the smallest Double without an exponent: JSONDecoder refuses it rather than reading 0.
            #"{"type":"location","latitude":0."# + String(repeating: "0", count: 330) + #"1,"longitude":3,"timestamp":"2024-05-01T06:00:00Z","isSimulated":false}"#,
        ]
        for line in lines {
            #expect(LocationLineDecoder.location(Array(line.utf8)) == nil, "\(line)")
        }
        let plain = #"{"type":"location","latitude":1.5,"longitude":-3,"timestamp":"2024-05-01T06:00:00.25Z","satellitesUsed":7,"isSimulated":true}"#
        let read = LocationLineDecoder.location(Array(plain.utf8))
        #expect(read == Self.slow(Array(plain.utf8)) && read?.satellitesUsed == 7 && read?.isSimulated == true)
        // A count beyond a Double's whole numbers is read exactly, as JSONDecoder reads it.
        let big = #"{"type":"location","latitude":1,"longitude":3,"timestamp":"2024-05-01T06:00:00Z","satellitesUsed":9007199254740993,"isSimulated":false}"#
        #expect(LocationLineDecoder.location(Array(big.utf8))?.satellitesUsed == Self.slow(Array(big.utf8))?.satellitesUsed)
    }

    @Test("a held batch is one line whose locations read back exactly, directly or through JSONDecoder (2,000 random batches)")
    func batchLinesReadBackWhole() throws {
        var random = SplitMix64(seed: 24)
        var direct = 0
        for round in 0..<2_000 {
            let count = Int(random.next() % 40)
            // Half of the batches are a receiver's plain fixes, which the direct path must take.
            let locations = round % 2 == 0
                ? LocationFixtures.walk(count: count, from: round)
                : (0..<count).map { _ in Self.randomLocation(&random) }
            let id: String? = round % 3 == 0 ? nil : "r\(round).\(count)"
            var line = JSONLineEncoder.line(.locations(locations, .held(.foreground)), batchID: id)
            line.removeLast()
            if LocationLineDecoder.batch(line) != nil { direct += 1 }
            if round % 2 == 0 { #expect(LocationLineDecoder.batch(line) != nil, "a plain batch goes direct") }
            // A batch is never empty: a line without fixes is no event, and is skipped.
            let expected = locations.isEmpty ? nil : EventFrame(.locations(locations, .held(.foreground)), batchID: id)
            #expect(try LocationEventDecoder.frameIfKnown(line) == expected)
        }
        #expect(direct >= 1_000, "\(direct) of 2,000 read directly")
    }

    @Test("a batch line whose count disagrees with its locations, or that is cut, is refused as invalid-data")
    func damagedBatchLinesAreRefused() throws {
        let fixes = LocationFixtures.walk(count: 3)
        var line = JSONLineEncoder.line(.locations(fixes, .held(.foreground)), batchID: "a.3")
        line.removeLast()
        let text = String(decoding: line, as: UTF8.self)
        let miscounted = Array(text.replacingOccurrences(of: #""count":3"#, with: #""count":4"#).utf8)
        #expect(LocationLineDecoder.batch(miscounted) == nil)
        #expect(throws: LocationError.self) { try LocationEventDecoder.frame(miscounted) }
        do {
            _ = try LocationEventDecoder.frame(miscounted)
        } catch {
            #expect(error.code == .invalidData && error.message.contains("count 4 but 3 locations"), "\(error)")
        }
        for cut in [line.count - 1, line.count - 2, line.count / 2] {
            #expect(throws: LocationError.self, "cut at \(cut)") { try LocationEventDecoder.frame(Array(line.prefix(cut))) }
        }
        // A line an earlier version wrote (its locations followed as lines) is skipped: its fixes come as lines.
        let earlier = Array(#"{"type":"batch","count":3,"reason":"foreground","id":"a.3"}"#.utf8)
        #expect(try LocationEventDecoder.frameIfKnown(earlier) == nil)
    }
}
