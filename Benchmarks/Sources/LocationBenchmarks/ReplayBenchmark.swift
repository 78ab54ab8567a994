import Foundation
import LocationCore
import LocationGPX

/// Replay as fast as possible: a GPX file through `LocationManager` to a delegate that only counts, in this
/// process; and `locationctl replay --fast --format jsonl` writing to /dev/null, as a child process.
package enum ReplayBenchmark {
    /// Median locations per second delivered to the delegate (file reading and parsing included).
    package static func manager(file: String, points: Int, runs: Int) async throws -> Double {
        var rates: [Double] = []
        for _ in 0..<max(1, runs) {
            let application = Application()
            try application.transition(to: .active)
            let source = try GPXReplaySource(path: file, options: .init(pacing: .asFastAsPossible))
            let manager = try LocationManager(source: source, application: application, configuration: .init())
            let delegate = CountingDelegate()
            manager.delegate = delegate
            let start = ContinuousClock.now
            manager.startUpdatingLocation()
            let deadline = start + .seconds(600)
            while delegate.count < points, ContinuousClock.now < deadline {
                try await Task.sleep(for: .microseconds(200))
            }
            let elapsed = start.duration(to: .now).seconds
            manager.stopUpdatingLocation()
            await manager.waitForPendingDeliveries()
            manager.shutdown()
            guard delegate.count == points else { throw BenchError("the manager delivered \(delegate.count) of \(points) locations") }
            rates.append(Double(points) / elapsed)
        }
        return Statistics.median(rates)
    }

    /// Median JSON lines per second of `locationctl replay FILE --fast --format jsonl > /dev/null` (whole
    /// process), or nil when locationctl is not built next to this executable.
    package static func commandLine(file: String, points: Int, runs: Int) throws -> Double? {
        guard let locationctl = SiblingExecutable.path("locationctl") else { return nil }
        var rates: [Double] = []
        for _ in 0..<max(1, runs) {
            let result = try ProcessMeasurement.run([locationctl, "replay", file, "--fast", "--format", "jsonl"], discardOutput: true)
            guard result.status == 0 else { throw BenchError("locationctl replay exited with status \(result.status)") }
            // One line per location plus the opening state line.
            rates.append(Double(points + 1) / result.seconds)
        }
        return Statistics.median(rates)
    }
}
