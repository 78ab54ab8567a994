// Measures the gpsd source in release mode:
//   latency   time from a TPV line being written to our socket to the delegate call, p50/p99 at 10 Hz
//   cpu       process CPU time of the reduced (duty-cycled) policy vs the high (continuous) one on the
//             same 10 Hz feed from a real gpsd (gpsfake)
//   recovery  time from gpsd accepting connections again to the first delivered fix
//   acquisition  CPU time of one connect-to-first-fix acquisition (the fixed cost of each reduced cycle)
// Usage: locationbench gpsd [latency|cpu|recovery|all] [--seconds N] [--interval N]
// The measuring code is in LocationBenchmarks, shared with the default figures of locationbench.
import Foundation
import LocationBenchmarks

/// `locationbench gpsd`.
enum GPSDCommand {
    static func run(_ commandArguments: [String]) async throws {
        var command = "all"
        var seconds = 60.0
        var interval = 10.0
        var arguments = commandArguments
        while let argument = arguments.first {
            arguments.removeFirst()
            switch argument {
            case "--seconds" where !arguments.isEmpty: seconds = Double(arguments.removeFirst()) ?? seconds
            case "--interval" where !arguments.isEmpty: interval = Double(arguments.removeFirst()) ?? interval
            case "latency", "cpu", "reduced", "recovery", "acquisition", "all": command = argument
            default:
                FileHandle.standardError.write(Data("usage: locationbench gpsd [latency|cpu|recovery|all] [--seconds N] [--interval N]\n".utf8))
                exit(64)
            }
        }

        if command == "reduced" {
            let result = try await GPSDBenchmark.cpu(seconds: seconds, interval: interval, reducedOnly: true)
            print(String(format: "reduced  (every %.0f s) %.3f s CPU, %d fixes: %.0f µs per acquisition",
                interval, result.reduced.cpuSeconds, result.reduced.fixes, 1e6 * result.reduced.cpuSeconds / Double(max(result.reduced.fixes, 1))))
        }
        if command == "acquisition" {
            let perAcquisition = try await GPSDBenchmark.acquisition(count: 50)
            print(String(format: "acquisition  %.0f µs CPU per connect + WATCH + first fix + close (%d runs, feed server included)",
                perAcquisition * 1e6, 50))
        }
        if command == "latency" || command == "all" {
            let latency = try await GPSDBenchmark.latency(seconds: min(seconds, 60))
            print(String(format: "latency  %d fixes at 10 Hz: p50 %.0f µs, p99 %.0f µs, max %.0f µs (line written -> delegate)",
                latency.fixes, latency.p50, latency.p99, latency.maximum))
        }
        if command == "recovery" || command == "all" {
            for outage in [1.0, 4.0, 12.0] {
                let recovery = try await GPSDBenchmark.recovery(outage: outage)
                print(String(format: "recovery after a %.0f s outage: first fix %.2f s after gpsd came back (backoff cap %.0f s)",
                    outage, recovery, 5.0))
            }
        }
        if command == "cpu" || command == "all" {
            let result = try await GPSDBenchmark.cpu(seconds: seconds, interval: interval)
            if let high = result.high {
                print(String(format: "cpu      high %.3f s CPU, %d messages, %d fixes over %.0f s", high.cpuSeconds, high.messages, high.fixes, seconds))
                print(String(format: "cpu      reduced (every %.0f s) %.3f s CPU, %d messages, %d fixes over %.0f s",
                    interval, result.reduced.cpuSeconds, result.reduced.messages, result.reduced.fixes, seconds))
                print(String(format: "cpu      idle process (no source) %.3f s CPU over %.0f s", result.idle, seconds))
                print(String(format: "cpu      reduced / high: %.1f %% of CPU time, %.1f %% of messages",
                    100 * result.reduced.cpuSeconds / high.cpuSeconds, 100 * Double(result.reduced.messages) / Double(high.messages)))
                print(String(format: "cpu      reduced / high, each less the idle process: %.1f %%", 100 * (result.ratioLessIdle ?? .nan)))
            }
        }
    }
}
