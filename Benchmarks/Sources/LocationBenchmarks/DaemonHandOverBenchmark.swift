import Foundation
import GPSDTestSupport
import LocationControl
import LocationCore

#if canImport(Glibc)
    import Glibc
#endif

/// What an app feels when it comes back to locationd after its process was gone: the time from starting its
/// manager (`DaemonLocationSource`) to its delegate having the whole batch the daemon held for it: connect,
/// `open` with `attach` (the daemon flushes the batch into the app's outbox, written and synced), `watch`
/// (the batch sent as one unit), reading and decoding it, and the manager's hand-over to the delegate.
///
/// Each run starts a `locationd` (with a journal) replaying a generated 1 Hz track 50,000 times faster than
/// recorded (about 4 s for 220,000 points), with an app that attached and went away at once, so that the
/// daemon holds one fix per acquisition for it until the replay ends; then the app comes back. Medians of
/// `runs`.
package enum DaemonHandOverBenchmark {
    /// The figures of the runs.
    package struct Result: Sendable {
        /// Seconds from starting the manager to the delegate having the batch (median).
        package var seconds: Double
        /// Fixes in the batch the delegate got (the smallest of the runs).
        package var fixes: Int
    }

    package static func run(runs: Int, fixes: Int = 100_000) async throws -> Result? {
        guard let locationd = SiblingExecutable.path("locationd") else { return nil }
        let directory = NSTemporaryDirectory() + "locationbench-handover-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let track = directory + "/track.gpx"
        // More points than the batch holds (100,000 by default): the app goes away while the first are played,
        // and the batch is full at the end (the oldest dropped).
        // A GPX point has no accuracy to meet the background acquisition's, so each acquisition ends at its
        // timeout (0.1 s of track time, below): one fix held per two points.
        try GPXBenchFile.generate(path: track, points: 2 * fixes + fixes / 5)
        var times: [Double] = []
        var smallest = Int.max
        for run in 0..<max(1, runs) {
            let state = directory + "/run\(run)"
            try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
            let socket = state + "/control.sock"
            let daemon = try ChildProcess(
                [
                    locationd, "--replay", track, "--speed", "50000", "--reduced-interval", "1", "--socket", socket,
                    "--journal", state + "/held.journal",
                ], environment: ["LOCATIOND_REDUCED_ACQUISITION_TIMEOUT": "0.1"])
            defer { daemon.stop() }
            try await waitUntil("locationd listens on \(socket)") { access(socket, F_OK) == 0 }
            // The app attaches and goes away at once: from then on the daemon holds its fixes.
            do {
                let app = try ControlClient(path: socket)
                _ = try app.request(.open(app: "bench", attach: true, policy: AppPolicy(reducedInterval: 1)))
                app.close()
            }
            var held = 0
            try await waitUntil("locationd holds \(fixes) fixes for the app", timeout: .seconds(120)) {
                held = (try? Self.held(socket: socket)) ?? 0
                return held >= fixes
            }
            // The replay has ended and its last fixes are held: nothing else runs while the app comes back (the
            // count alone stops changing earlier, once the batch is full and drops its oldest).
            try await waitUntil("locationd's replay ends", timeout: .seconds(120)) {
                try Self.status(socket: socket).sourceStatus == .ended
            }
            var steady = 0
            while steady < 3 {
                try await Task.sleep(for: .milliseconds(100))
                let now = try Self.held(socket: socket)
                steady = now == held ? steady + 1 : 0
                held = now
            }

            let (seconds, count) = try await comeBack(socket: socket, expecting: held)
            times.append(seconds)
            smallest = min(smallest, count)
        }
        return Result(seconds: Statistics.median(times), fixes: smallest)
    }

    /// Starts the app's manager through locationd and waits for its delegate to have the held batch.
    private static func comeBack(socket: String, expecting count: Int) async throws -> (Double, Int) {
        final class Receiver: LocationManagerDelegate {
            let arrived = Locked<(at: ContinuousClock.Instant, count: Int)?>(nil)
            func locationManager(_ manager: LocationManager, didReceive event: LocationEvent) {
                if case .locations(let locations, .held) = event, arrived.value == nil {
                    arrived.withLock { $0 = (.now, locations.count) }
                }
            }
        }
        let application = Application()
        let receiver = Receiver()
        let start = ContinuousClock.now
        let manager = try LocationManager(source: try DaemonLocationSource(app: "bench", socket: socket), application: application)
        manager.delegate = receiver
        try application.finishLaunching()
        try application.becomeActive()
        manager.startUpdatingLocation()
        try await waitUntil("the delegate gets the batch", timeout: .seconds(60)) { receiver.arrived.value != nil }
        guard let (at, delivered) = receiver.arrived.value else { throw BenchError("no batch") }
        manager.stopUpdatingLocation()
        await manager.waitForPendingDeliveries()
        if delivered < count { throw BenchError("the delegate got \(delivered) of \(count) held fixes") }
        return ((at - start).seconds, delivered)
    }

    /// How many fixes locationd holds for the app, held or flushed and unacknowledged.
    private static func held(socket: String) throws -> Int {
        let status = try status(socket: socket)
        return status.held + (status.unacknowledged ?? 0)
    }

    /// The app's status in locationd.
    private static func status(socket: String) throws -> DaemonStatus {
        let client = try ControlClient(path: socket)
        _ = try client.request(.open(app: "bench", create: false))
        return try client.request(.status).decode(DaemonStatus.self, forKey: "status")
    }
}
