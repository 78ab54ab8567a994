import Foundation
import LocationBenchmarks

// Measures the suspended-batching figures. Run in release mode:
//   swift run -c release locationbench batch [--runs N]
// Inputs are generated deterministically (LocationFixtures.walk); medians of N runs are printed.
// The measuring code is in LocationBenchmarks, shared with the default figures of locationbench.

/// `locationbench batch`.
enum BatchCommand {
    static func run(_ commandArguments: [String]) async throws {
        let arguments = commandArguments[...]
        if arguments.contains("--help") || arguments.contains("-h") {
            print(
                """
                usage: locationbench batch [--runs N]

                Measures, in this process: memory per held fix for a 1,000,000-fix batch, time to flush a
                100,000-fix batch to a delegate through LocationManager, and the journal append rate; then,
                with locationd, the time from an app's return to its delegate having the 100,000 fixes the
                daemon held while it was gone.
                Build with -c release; debug builds are many times slower.
                """)
            exit(0)
        }
        var runs = 5
        if let index = arguments.firstIndex(of: "--runs"), arguments.index(after: index) < arguments.endIndex,
            let value = Int(arguments[arguments.index(after: index)]), value > 0
        {
            runs = value
        } else if arguments.contains("--runs") {
            FileHandle.standardError.write(Data("locationbench batch: --runs needs a positive whole number\n".utf8))
            exit(64)
        }

        let result = try BatchBenchmark(runs: runs).run()

        func format(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }
        print("locationbench batch: medians of \(runs) runs (release build expected)")
        print("| figure | measured | goal |")
        print("|---|---:|---:|")
        print("| held batch, 1,000,000 fixes: encoded bytes per fix | \(format(result.encodedBytesPerFix)) B | ≤ 96 B |")
        print("| held batch, 1,000,000 fixes: resident memory growth per fix | \(format(result.residentBytesPerFix)) B | ≤ 96 B |")
        print("| (for scale) one `Location` in a Swift array | \(BatchBenchmark.locationStride) B | |")
        print("| flush of a 100,000-fix batch to a delegate | \(format(result.flushSeconds * 1000)) ms | ≤ 50 ms |")
        print("| journal append, one write per fix | \(format(result.journalAppendsPerSecond / 1000, 0)) k fixes/s | ≥ 200 k fixes/s |")
        for (name, seconds, bytes) in [
            ("JSON locations", result.lineSeconds.json, result.lineBytes.json),
            ("journal records", result.lineSeconds.records, result.lineBytes.records),
        ] {
            print("| a 100,000-fix batch line as \(name) (\(format(Double(bytes) / 1_048_576)) MiB): written; read back | \(format(seconds.write * 1000)) ms; \(format(seconds.read * 1000)) ms | |")
        }
        if let handOver = try await DaemonHandOverBenchmark.run(runs: runs) {
            print("| a \(handOver.fixes)-fix batch locationd held for a gone app: the app's manager started → its delegate has it | \(format(handOver.seconds * 1000)) ms | ≤ 200 ms |")
        } else {
            print("| held batch through locationd | locationd not built (swift build -c release) | ≤ 200 ms |")
        }
    }
}
