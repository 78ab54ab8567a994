import Foundation
import LocationCore
import LocationTesting
import Testing

@testable import LocationGPX
@testable import gpx_fuzz

/// Thousands of deterministic mutations of small GPX files: the reader (and the replay schedule on top of
/// it) must return points or throw a `GPXError`, never crash or hang. This runs in every test run without
/// libFuzzer; `scripts/fuzz` runs the coverage-guided fuzz target (Sources/gpx-fuzz) on the same seeds.
///
/// `GPX_FUZZ_CASES` sets the number of cases (default 5000), `GPX_FUZZ_SEED` the seed; a failure message
/// names the case, which the same seed reproduces.
@Suite struct FuzzTests {
    static let cases = ProcessInfo.processInfo.environment["GPX_FUZZ_CASES"].flatMap { Int($0) } ?? 5000
    static let seed = ProcessInfo.processInfo.environment["GPX_FUZZ_SEED"].flatMap { UInt64($0) } ?? 0x6770_7866_757A_7A31

    /// Small seed documents: the fuzz target's own, plus the small real files when they are present.
    static let seeds: [[UInt8]] = {
        var seeds = FuzzSeeds.documents
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

    static let tokens = FuzzSeeds.tokens
    static let values = FuzzSeeds.values

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
            // And through the fuzz target's properties: chunking, the writer round trip, errors that name
            // the input (see GPXFuzzHarness).
            do {
                try GPXFuzzHarness.check(input)
            } catch {
                Issue.record("case \(index): \(error)")
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
