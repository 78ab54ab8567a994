import Foundation
import LocationCore
import LocationTesting
import Testing

@testable import LocationControl

/// A held batch as journal records (`watch` with `"batches":"records"`), the Swift client's encoding.
@Suite("Held batches as journal records")
struct HeldBatchRecordsTests {
    /// The batch line of `locations` in the records encoding, without its newline.
    static func recordsLine(_ locations: [Location], id: String? = "r.1", count: Int? = nil) -> [UInt8] {
        var records: [UInt8] = []
        JSONLineEncoder.appendRecords(of: locations, to: &records)
        var line = JSONLineEncoder.batchLine(count: count ?? locations.count, reason: "foreground", id: id, records: records)
        line.removeLast()
        return line
    }

    @Test("base64 matches RFC 4648's test vectors both ways, and refuses what is not padded base64")
    func base64() {
        let vectors = ["": "", "f": "Zg==", "fo": "Zm8=", "foo": "Zm9v", "foob": "Zm9vYg==", "fooba": "Zm9vYmE=", "foobar": "Zm9vYmFy"]
        for (plain, encoded) in vectors {
            var bytes: [UInt8] = []
            Base64.append(Array(plain.utf8), to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == encoded)
            #expect(Array(encoded.utf8).withUnsafeBufferPointer { Base64.decode($0) } == Array(plain.utf8))
        }
        // Every byte value, and every length's padding.
        let all = (0..<256).map { UInt8($0) }
        for length in 250...256 {
            var bytes: [UInt8] = []
            Base64.append(Array(all.prefix(length)), to: &bytes)
            #expect(bytes.withUnsafeBufferPointer { Base64.decode($0) } == Array(all.prefix(length)))
        }
        // A length not a multiple of 4, a byte outside the alphabet, padding inside, bits left over.
        for bad in ["Zg=", "Zm9", "Zm9v!A==", "Zg==Zm9v", "Z===", "Zh==", "Zm9=", "Zm 9v", "Zm9v\n"] {
            #expect(Array(bad.utf8).withUnsafeBufferPointer { Base64.decode($0) } == nil, "\(bad)")
        }
    }

    @Test("a batch's records read back to exactly its fixes, directly or through JSONDecoder (1,000 random batches)")
    func recordsReadBackExactly() throws {
        var random = SplitMix64(seed: 27)
        for round in 0..<1_000 {
            let count = 1 + Int(random.next() % 40)
            let locations = round % 2 == 0
                ? LocationFixtures.walk(count: count, from: round)
                : (0..<count).map { _ in LocationLineDecoderTests.randomLocation(&random) }
            let line = Self.recordsLine(locations, id: "r\(round).\(count)")
            let expected = EventFrame(.locations(locations, .held(.foreground)), batchID: "r\(round).\(count)")
            #expect(LocationLineDecoder.batch(line)?.locations == locations)
            #expect(try LocationEventDecoder.frameIfKnown(line) == expected)
            // The same line with its keys in another order (another writer's) goes through JSONDecoder.
            let text = String(decoding: line, as: UTF8.self)
            let reordered = Array(text.replacingOccurrences(of: #"{"type":"batch","count":\#(count),"#, with: #"{"count":\#(count),"type":"batch","#).utf8)
            #expect(LocationLineDecoder.batch(reordered) == nil)
            #expect(try LocationEventDecoder.frameIfKnown(reordered) == expected)
        }
    }

    @Test("records are less than half the JSON locations' bytes for a receiver's fixes")
    func recordsAreSmaller() {
        let walk = LocationFixtures.walk(count: 1_000)
        let json = JSONLineEncoder.line(.locations(walk, .held(.foreground)), batchID: "r.1")
        let records = Self.recordsLine(walk)
        #expect(records.count * 2 < json.count, "records \(records.count) bytes, JSON \(json.count)")
    }

    @Test("a damaged record, a cut, a miscount or records beside locations make the line invalid-data, never fewer fixes")
    func damagedRecordsAreRefused() throws {
        let fixes = LocationFixtures.walk(count: 5)
        let line = Self.recordsLine(fixes)
        let text = String(decoding: line, as: UTF8.self)
        let start = try #require(text.range(of: #""records":""#)).upperBound
        let offset = text.distance(from: text.startIndex, to: start)
        var damaged: [[UInt8]] = []
        // One base64 character changed in the middle of a record: its checksum no longer matches.
        var flipped = line
        flipped[offset + 40] = flipped[offset + 40] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        damaged.append(flipped)
        // The last record cut off (whole base64 groups removed), not base64, a miscount, both encodings.
        damaged.append(Array(text.replacingOccurrences(of: String(text.dropLast(2).suffix(8)) + "\"}", with: "\"}").utf8))
        damaged.append(Array(text.replacingOccurrences(of: #""records":""#, with: #""records":"%%%%"#).utf8))
        damaged.append(Array(text.replacingOccurrences(of: #""count":5"#, with: #""count":6"#).utf8))
        damaged.append(Array(text.replacingOccurrences(of: #""records":"#, with: #""locations":[],"records":"#).utf8))
        for bad in damaged {
            #expect(LocationLineDecoder.batch(bad) == nil)
            do {
                let frame = try LocationEventDecoder.frameIfKnown(bad)
                Issue.record("read as \(String(describing: frame)): \(String(decoding: bad.prefix(200), as: UTF8.self))")
            } catch {
                #expect(error.code == .invalidData, "\(error)")
            }
        }
    }

    @Test("watch takes batches locations or records, and refuses any other encoding as bad-request")
    func watchRequestNamesItsEncoding() throws {
        #expect(try ControlRequest(line: Array(#"{"command":"watch","batches":"records"}"#.utf8)) == .watch(batches: .records))
        #expect(try ControlRequest(line: Array(#"{"command":"watch","batches":"locations"}"#.utf8)) == .watch)
        #expect(try ControlRequest(line: ControlRequest.watch(batches: .records).jsonLine.dropLast()) == .watch(batches: .records))
        #expect(String(decoding: ControlRequest.watch.jsonLine, as: UTF8.self) == "{\"command\":\"watch\"}\n")
        for bad in [#""xml""#, "1", "true", #""""#, #""Records""#, "null"] {
            do {
                _ = try ControlRequest(line: Array(#"{"command":"watch","batches":\#(bad)}"#.utf8))
                Issue.record("accepted batches \(bad)")
            } catch {
                #expect(error.code == .badRequest, "\(bad): \(error)")
            }
        }
    }
}
