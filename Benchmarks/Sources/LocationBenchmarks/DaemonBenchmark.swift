import Foundation
import GPSDTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// One position from a running service, as a user's shell would get it: the wall time of
/// `locationctl current` against a running `locationd` (replaying a generated GPX file in a loop), and of
/// `gpspipe -w -n 5` against a gpsd fed by gpsfake. Medians of `runs` whole-process runs.
package enum DaemonBenchmark {
    /// Median seconds of each command; nil when it could not be measured, with the reason.
    package struct Result: Sendable {
        package var locationctlCurrent: Double?
        package var locationctlNote: String?
        package var gpspipe: Double?
        package var gpspipeNote: String?
    }

    package static func run(runs: Int, gpxFile: String) async throws -> Result {
        var result = Result()
        if let locationctl = SiblingExecutable.path("locationctl"), let locationd = SiblingExecutable.path("locationd") {
            let directory = NSTemporaryDirectory() + "locationbench-daemon-\(getpid())"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let socket = directory + "/control.sock"
            let daemon = try ChildProcess([locationd, "--replay", gpxFile, "--loop", "--socket", socket])
            defer { daemon.stop() }
            let command = [locationctl, "current", "--socket", socket, "--timeout", "5"]
            // Wait until the daemon answers with a fix.
            let deadline = ContinuousClock.now + .seconds(20)
            var ready = false
            while !ready, ContinuousClock.now < deadline {
                ready = (try? ProcessMeasurement.run(command, measureRSS: false, discardErrors: true))?.status == 0
                if !ready { try await Task.sleep(for: .milliseconds(50)) }
            }
            if ready {
                var times: [Double] = []
                for _ in 0..<max(1, runs) {
                    let run = try ProcessMeasurement.run(command, measureRSS: false)
                    guard run.status == 0 else { throw BenchError("locationctl current exited with status \(run.status)") }
                    times.append(run.seconds)
                }
                result.locationctlCurrent = Statistics.median(times)
            } else {
                result.locationctlNote = "locationd never answered"
            }
        } else {
            result.locationctlNote = "not built (swift build -c release)"
        }
        guard let gpspipe = ExecutableLookup.path(of: "gpspipe"), GPSFake.isInstalled else {
            result.gpspipeNote = "not installed (apt-get install gpsd gpsd-clients python3-gps)"
            return result
        }
        let fake = try GPSFake.start(epochs: 10 * (60 + 2 * runs))
        defer { fake.stop() }
        // gpsfake ends its feed without a client; keep one watching, as a real receiver would keep gpsd busy.
        let keeper = try ChildProcess(["gpspipe", "-w", "127.0.0.1:\(fake.port)"])
        defer { keeper.stop() }
        let command = [gpspipe, "-w", "-n", "5", "127.0.0.1:\(fake.port)"]
        _ = try ProcessMeasurement.run(command, measureRSS: false)
        var times: [Double] = []
        for _ in 0..<max(1, runs) {
            let run = try ProcessMeasurement.run(command, measureRSS: false)
            guard run.status == 0 else { throw BenchError("gpspipe exited with status \(run.status)") }
            times.append(run.seconds)
        }
        result.gpspipe = Statistics.median(times)
        return result
    }
}
