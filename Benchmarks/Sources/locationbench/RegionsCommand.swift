import Foundation
import LocationBenchmarks

// Region evaluation per fix. Run in release mode:
//   swift run -c release locationbench regions [--runs N]

/// `locationbench regions`.
enum RegionsCommand {
    static func run(_ arguments: [String]) async throws {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(
                """
                usage: locationbench regions [--runs N]

                Times RegionMonitor per fix with 1, 100 and 10,000 regions (20,000 fixes of a wandering
                track, medians of N runs), beside the bare distance < radius test over every region that
                the servers run on each fix. The goal is at most 1 ms a fix with 10,000 regions. Build with
                -c release.
                """)
            exit(0)
        }
        let options = WholeNumberOption(command: "regions", arguments: arguments)
        let runs = options.value("--runs", default: 5)
        print("region evaluation per fix (medians of \(runs) runs over 20,000 fixes)")
        print("  regions   RegionMonitor   every region, bare   events")
        for count in [1, 100, 10_000] {
            let result = try RegionBenchmark.run(regionCount: count, runs: runs)
            print(String(format: "  %7d   %10.2f µs   %15.2f µs   %6d", count, result.monitorNanosecondsPerFix / 1000,
                         result.bareNanosecondsPerFix / 1000, result.events))
        }
    }
}
