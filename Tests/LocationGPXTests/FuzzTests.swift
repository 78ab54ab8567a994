import Foundation
import LocationCore
import LocationTesting
import Testing

@testable import LocationGPX
import LocationDevSupport

/// Thousands of deterministic mutations of small GPX files: the reader (and the replay schedule on top of
/// it) must return points or throw a `GPXError`, never crash or hang. This runs in every test run without
/// libFuzzer; `scripts/fuzz` runs the coverage-guided fuzz target (Fuzz/Sources/gpx-fuzz) on the same seeds.
///
/// `GPX_FUZZ_CASES` sets the number of cases (default 5000), `GPX_FUZZ_SEED` the seed; a failure message
/// names the case, which the same seed reproduces.
@Suite struct FuzzTests {
    static let cases = ProcessInfo.processInfo.environment["GPX_FUZZ_CASES"].flatMap { Int($0) } ?? 5000
    static let seed = ProcessInfo.processInfo.environment["GPX_FUZZ_SEED"].flatMap { UInt64($0) } ?? 0x6770_7866_757A_7A31

    /// The small real files that join the fuzz target's own seed documents.
    static let realSeedNames = [
        "gpxpy__gpx1.0_with_all_fields.gpx", "gpxpy__gpx1.1_with_all_fields.gpx", "gpxpy__track_with_speed.gpx",
        "gpxpy__unicode_with_bom.gpx", "gpxpy__track-with-empty-segment.gpx", "gpxpy__route.gpx",
    ]

    /// Small seed documents: the fuzz target's own, plus every one of ``realSeedNames`` (a file that cannot
    /// be read is left out, and the test fails on the count).
    static let seeds: [[UInt8]] = {
        var seeds = FuzzSeeds.documents
        for name in realSeedNames {
            if let text = try? String(contentsOfFile: TestData.path(name), encoding: .utf8) { seeds.append(text) }
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
                let donor = Self.seeds[Int(random.next() % UInt64(seeds.count))]
                guard !donor.isEmpty else { break }
                let start = Int(random.next() % UInt64(donor.count))
                let end = min(donor.count, start + Int(random.next() % 300) + 1)
                bytes.insert(contentsOf: donor[start..<end], at: position)
            }
        }
        return bytes
    }

    /// What the cases found, shared between the thread that runs them and the test that watches it.
    struct Progress: Sendable {
        /// The case being run now.
        var index = -1
        /// Its input, kept so that a hang can be reproduced.
        var input: [UInt8] = []
        var done = false
        var failures: [String] = []
        var outcomes: [String: Int] = [:]
        var slowest: (Duration, Int) = (.zero, -1)
    }

    /// A case that has not finished after this long hangs. A normal build's slowest case takes about 0.2 s,
    /// a sanitizer build's a few times that.
    static let hangAfter: Duration = .seconds(30)

    /// The errors the replay schedule may throw for a readable file: what the reader finds wrong with its
    /// content. `io` (the file is there) and `writer-closed` (nothing is written) would be bugs.
    static let plannerErrors = Set(GPXError.Code.allCases).subtracting([.io, .writerClosed])

    /// The cases run on a thread of their own while the test watches: a case that hangs fails the test,
    /// naming the case and saving its input, instead of blocking the whole run (the thread is left behind).
    @Test(
        .timeLimit(.minutes(5)),
        .enabled(
            if: TestData.isAvailable,
            "the real GPX files that seed the mutations are missing: set GPX_TESTDATA or check ../shared/testdata/gpx"))
    func mutatedFilesNeverCrashOrHang() throws {
        let seeds = Self.seeds
        #expect(seeds.count == FuzzSeeds.documents.count + Self.realSeedNames.count)
        let directory = try temporaryDirectory()
        let progress = Locked(Progress())
        let worker = Thread { Self.runCases(seeds: seeds, directory: directory, progress: progress) }
        worker.stackSize = 16 << 20
        worker.start()
        var watched = -1
        var since = ContinuousClock.now
        while true {
            let (index, done) = progress.withLock { ($0.index, $0.done) }
            if done { break }
            if index != watched {
                (watched, since) = (index, .now)
            } else if since.duration(to: .now) > Self.hangAfter {
                let input = progress.withLock { $0.input }
                let saved = "\(directory)/hang-case-\(index).gpx"
                _ = FileManager.default.createFile(atPath: saved, contents: Data(input))
                Issue.record("case \(index) (seed \(Self.seed)) hangs: no result after \(Self.hangAfter); its input is in \(saved)")
                return
            }
            usleep(10_000)
        }
        try? FileManager.default.removeItem(atPath: directory)
        let result = progress.withLock { $0 }
        for failure in result.failures { Issue.record(Comment(rawValue: failure)) }
        print("GPX fuzz: \(Self.cases) cases, seed \(Self.seed): \(result.outcomes.sorted { $0.key < $1.key }); slowest case \(result.slowest.1) took \(result.slowest.0)")
        #expect(result.outcomes.values.reduce(0, +) == Self.cases, "every case ran")
        #expect(result.outcomes["ok", default: 0] > Self.cases / 50, "mutations should not all be fatal")
    }

    /// Runs every case, recording what it finds in `progress` (the test's own expectations cannot be used
    /// off the test's thread).
    static func runCases(seeds: [[UInt8]], directory: String, progress: Locked<Progress>) {
        var random = SplitMix64(seed: Self.seed)
        func fail(_ message: String) { progress.withLock { $0.failures.append(message) } }
        for index in 0..<Self.cases {
            let seed = seeds[Int(random.next() % UInt64(seeds.count))]
            let input = Self.mutate(seed, &random)
            progress.withLock {
                $0.index = index
                $0.input = input
            }
            let chunkSize = [1, 2, 3, 7, 64, 4096, 1 << 18][Int(random.next() % 7)]
            let start = ContinuousClock.now
            let outcome: String
            do {
                let points = try parse(bytes: input, chunkSize: chunkSize, name: "case-\(index).gpx")
                if points.count > input.count { fail("case \(index): \(points.count) points from \(input.count) bytes") }
                for point in points where !(abs(point.latitude) <= 90 && abs(point.longitude) <= 180) {
                    fail("case \(index): a point off the globe: \(point)")
                }
                outcome = "ok"
            } catch {
                if error.file != "case-\(index).gpx" { fail("case \(index): the error does not name the input: \(error)") }
                outcome = error.code.rawValue
            }
            // And through the fuzz target's properties: chunking, the writer round trip, errors that name
            // the input (see GPXFuzzHarness).
            do {
                try GPXFuzzHarness.check(input)
            } catch {
                fail("case \(index): \(error)")
            }
            // Every tenth case also goes through the replay schedule, from a file: it plays points or
            // fails with a reason about the file's content, naming the file.
            if index % 10 == 0 {
                let path = "\(directory)/case.gpx"
                _ = FileManager.default.createFile(atPath: path, contents: Data(input))
                do throws(GPXError) {
                    let planner = try ReplayPlanner(path: path, options: .init(loop: true, untimedSpeed: 1000), startDate: replayStart)
                    var steps = 0
                    while steps < 200, let step = try planner.next() {
                        if step.trackTime < .zero { fail("case \(index): step \(steps) at track time \(step.trackTime)") }
                        steps += 1
                    }
                } catch {
                    if !plannerErrors.contains(error.code) || error.file != path {
                        fail("case \(index): the replay schedule failed with \(error.code.rawValue) (file \(error.file ?? "none")): \(error)")
                    }
                }
            }
            let elapsed = start.duration(to: .now)
            progress.withLock {
                $0.outcomes[outcome, default: 0] += 1
                if elapsed > $0.slowest.0 { $0.slowest = (elapsed, index) }
            }
        }
        progress.withLock { $0.done = true }
    }
}
