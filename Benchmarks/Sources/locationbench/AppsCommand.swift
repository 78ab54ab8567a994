import Foundation
import LocationBenchmarks

// Measures locationd serving many apps. Run in release mode:
//   swift run -c release locationbench apps [--runs N] [--seconds N]

/// `locationbench apps`.
enum AppsCommand {
    static func run(_ arguments: [String]) async throws {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(
                """
                usage: locationbench apps [--runs N] [--seconds N]

                Measures locationd with many apps: locationctl current (median of N whole-process runs) for
                one app alone and while 50 other apps watch; the daemon's RSS with one session and with 100
                idle ones; and its CPU over one gpsd feed (gpsfake, 10 Hz) for N seconds with one foreground
                app, then with ten background apps beside it. Build with -c release.
                """)
            exit(0)
        }
        let options = WholeNumberOption(command: "apps", arguments: arguments)
        let runs = options.value("--runs", default: 21)
        let seconds = options.value("--seconds", default: 30)
        let result = try await AppsBenchmark.run(runs: runs, seconds: Double(seconds))
        print("locationd serving many apps (medians of \(runs) runs; CPU over \(seconds) s of a 10 Hz gpsd feed)")
        print(String(format: "  locationctl current, one app alone          %7.1f ms", result.currentAlone * 1000))
        print(String(format: "  locationctl current, 50 other apps watching %7.1f ms  (%.2f×)",
                     result.currentWith50Watching * 1000, result.currentWith50Watching / result.currentAlone))
        print(String(format: "  daemon RSS, one session                     %7.1f MiB", Double(result.rssOneSessionKiB) / 1024))
        print(String(format: "  daemon RSS, 100 more idle sessions          %7.1f MiB  (%.1f KiB a session)",
                     Double(result.rss100SessionsKiB) / 1024, Double(result.rss100SessionsKiB - result.rssOneSessionKiB) / 100))
        if let alone = result.cpuForegroundAlone, let together = result.cpuWith10Background {
            print(String(format: "  daemon CPU, one foreground app              %7.3f s per minute", alone))
            print(String(format: "  daemon CPU, + 10 background apps            %7.3f s per minute  (+%.1f%%)",
                         together, (together - alone) / max(alone, 1e-9) * 100))
        } else {
            print("  daemon CPU: not measured: \(result.cpuNote ?? "?")")
        }
    }
}
