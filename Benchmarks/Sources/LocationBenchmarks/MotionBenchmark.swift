import Foundation
import GPSDTestSupport
import LocationCore
import LocationGPSD

/// What stationary detection with `pausesWhenStationary` saves while parked: a `LocationManager` on a real
/// gpsd (gpsfake replaying a parked receiver at 10 Hz), measured with the detector on and the receiver
/// kept running, then with it pausing.
package enum MotionBenchmark {
    /// One phase: per minute of wall time.
    package struct Phase: Sendable {
        /// CPU seconds of this process per minute.
        package var cpuSecondsPerMinute: Double
        /// gpsd messages read per minute.
        package var messagesPerMinute: Double
        /// Fixes delivered per minute.
        package var fixesPerMinute: Double
    }

    /// Both phases over the same feed.
    package struct Result: Sendable {
        package var seconds: Double
        /// Stationary detection on, the receiver kept running (as a moving receiver is).
        package var running: Phase
        /// With `pausesWhenStationary`, once stationary.
        package var paused: Phase
        /// Seconds from the start until the detector said stationary.
        package var secondsToStationary: Double
    }

    /// A 10 Hz GGA + RMC capture of a receiver parked for `epochs` epochs, with a metre or two of noise.
    static func writeParkedCapture(epochs: Int) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("motion-bench-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).log")
        var text = ""
        func sentence(_ body: String) -> String {
            "$" + body + String(format: "*%02X", body.utf8.reduce(UInt8(0)) { $0 ^ $1 }) + "\r\n"
        }
        for epoch in 0..<epochs {
            let seconds = epoch / 10
            let time = String(format: "%02d%02d%02d.%02d", 6 + seconds / 3600, seconds / 60 % 60, seconds % 60, (epoch % 10) * 10)
            // Deterministic noise of about ±1.5 m.
            let latitude = 51.5 + sin(Double(epoch) * 0.7) * 0.000013, longitude = 0.1 + cos(Double(epoch) * 1.3) * 0.00002
            let lat = String(format: "%02d%07.4f", Int(latitude), (latitude - Double(Int(latitude))) * 60)
            let lon = String(format: "%03d%07.4f", Int(longitude), (longitude - Double(Int(longitude))) * 60)
            text += sentence("GPGGA,\(time),\(lat),N,\(lon),W,1,09,0.9,35.0,M,47.0,M,,")
            text += sentence("GPRMC,\(time),A,\(lat),N,\(lon),W,0.1,45.0,010524,,,A")
        }
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url
    }

    /// Runs both phases for `seconds` each (after the detector has decided the stop).
    package static func run(seconds: Double) async throws -> Result {
        let epochs = Int((2 * seconds + 200) * 10)
        let capture = try writeParkedCapture(epochs: epochs)
        defer { try? FileManager.default.removeItem(at: capture) }
        let fake = try GPSFakeProcess(capture: capture.path, options: ["-c", "0.05"])
        defer { fake.stop() }
        try await fake.waitUntilAccepting(timeout: .seconds(20))
        // A plain client keeps the feed running the same whatever the manager does.
        let keeper = try ChildProcess(["gpspipe", "-w", "127.0.0.1:\(fake.port)"])
        defer { keeper.stop() }
        let running = try await phase(port: fake.port, pauses: false, seconds: seconds)
        let paused = try await phase(port: fake.port, pauses: true, seconds: seconds)
        return Result(seconds: seconds, running: running.phase, paused: paused.phase, secondsToStationary: paused.toStationary)
    }

    private final class Counter: LocationManagerDelegate, @unchecked Sendable {
        // Written on the manager's delivery queue only (one thread at a time), read after waitForPendingDeliveries.
        var fixes = 0
        var stationaryAt: ContinuousClock.Instant?
        func locationManager(_ manager: LocationManager, didReceive event: LocationEvent) {
            switch event {
            case .locations(let locations, _): fixes += locations.count
            case .motion(let motion) where motion.state == .stationary: stationaryAt = stationaryAt ?? .now
            default: break
            }
        }
    }

    private static func phase(port: Int, pauses: Bool, seconds: Double) async throws -> (phase: Phase, toStationary: Double) {
        let source = try GPSDLocationSource(configuration: GPSDConfiguration(host: "127.0.0.1", port: port))
        let application = Application()
        let manager = try LocationManager(
            source: source, application: application,
            configuration: .init(motion: .init(), pausesWhenStationary: pauses))
        let counter = Counter()
        manager.delegate = counter
        try application.transition(to: .active)
        let start = ContinuousClock.now
        manager.startUpdatingLocation()
        // Until the detector decided the stop (a minute of fixes), at most three minutes.
        while manager.motionState != .stationary, ContinuousClock.now - start < .seconds(180) {
            try await Task.sleep(for: .milliseconds(100))
        }
        guard manager.motionState == .stationary else { throw BenchError("the parked feed never became stationary") }
        let toStationary = (ContinuousClock.now - start).seconds
        try await Task.sleep(for: .seconds(2))
        await manager.waitForPendingDeliveries()
        let fixesBefore = counter.fixes, messagesBefore = source.messagesRead, cpuBefore = GPSDBenchmark.cpuSeconds()
        try await Task.sleep(for: .seconds(seconds))
        await manager.waitForPendingDeliveries()
        let minutes = seconds / 60
        let phase = Phase(
            cpuSecondsPerMinute: (GPSDBenchmark.cpuSeconds() - cpuBefore) / minutes,
            messagesPerMinute: Double(source.messagesRead - messagesBefore) / minutes,
            fixesPerMinute: Double(counter.fixes - fixesBefore) / minutes)
        application.terminate()
        await manager.waitForPendingDeliveries()
        return (phase, toStationary)
    }
}
