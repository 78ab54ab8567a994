import Foundation
import GPSDTestSupport
import LocationControl
import LocationCore

#if canImport(Glibc)
    import Glibc
#endif

/// A fleet on one broker: `devices` locationd processes, each replaying a track of its own (a different
/// seed) at `speed` times real time into one persistent mosquitto on loopback through its OwnTracks uplink,
/// the broker stopped for `outage` seconds halfway. A `mosquitto_sub` with a persistent session counts, per
/// device, the distinct fix times (`tst`) that arrived: after de-duplication nothing may be missing.
package enum FleetBenchmark {
    package struct Result: Sendable {
        package var devices: Int
        package var fixesPerDevice: Int
        /// Fixes sent by all devices, and those of them that never arrived (after de-duplication).
        package var expected: Int
        package var lost: Int
        /// Messages that arrived more than once (repeats of the in-flight window after the restart).
        package var repeated: Int
        /// Distinct fixes per second at the subscriber, from the first daemon's start to the last arrival
        /// (the outage included).
        package var arrivalRate: Double
        /// Seconds from the first daemon's start to the last arrival.
        package var seconds: Double
        /// Per locationd process: CPU seconds over the run (mean), resident and proportional set size at
        /// the end (means, bytes).
        package var cpuSecondsPerDevice: Double
        package var rssPerDevice: Double
        package var pssPerDevice: Double
        /// The broker's CPU seconds over the run and resident size at the end.
        package var brokerCPUSeconds: Double
        package var brokerRSS: Double
        package var outage: Double
        package var speed: Int
    }

    package static func run(devices: Int, seconds: Int, speed: Int, outage: Double = 3) async throws -> Result? {
        guard let locationd = SiblingExecutable.path("locationd"), ExecutableLookup.path(of: "mosquitto") != nil,
            ExecutableLookup.path(of: "mosquitto_sub") != nil
        else { return nil }
        let directory = NSTemporaryDirectory() + "locationbench-fleet-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let points = seconds * speed
        for device in 0..<devices {
            let state = directory + "/d\(device)"
            try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            _ = try GPXBenchFile.generate(path: state + "/track.gpx", points: points, seed: UInt64(1_000 + device))
        }
        let port = try LoopbackTCP.freePort()
        let broker = try LoopbackBroker(directory: directory, port: port, persistent: true)
        defer { broker.stop() }
        let subscriber = try BrokerSubscriber(port: port, topics: ["owntracks/fleet/#"], sessionID: "locationbench-fleet")
        defer { subscriber.stop() }

        let start = ContinuousClock.now
        var daemons: [ChildProcess] = []
        defer { daemons.forEach { $0.stop() } }
        for device in 0..<devices {
            let state = directory + "/d\(device)"
            daemons.append(
                try ChildProcess([
                    locationd, "--replay", state + "/track.gpx", "--speed", "\(speed)", "--socket", state + "/control.sock",
                    "--journal", state + "/held.journal", "--uplink", "mqtt://127.0.0.1:\(port)/fleet/d\(device)",
                ]))
        }
        // The broker goes away halfway through the replays, and comes back.
        try await Task.sleep(until: start + .seconds(Double(seconds) / 2), clock: .continuous)
        let brokerCPU = broker.pid.map(UplinkDrainBenchmark.cpuSeconds) ?? .nan
        broker.stop()
        try await Task.sleep(for: .seconds(outage))
        try broker.start()
        try await waitUntil("every replay ends", timeout: .seconds(Double(seconds) * 4 + 120), poll: .milliseconds(500)) {
            (0..<devices).allSatisfy { device in
                (try? ControlClient.request(.status, path: directory + "/d\(device)/control.sock")
                    .decode(DaemonStatus.self, forKey: "status").sourceStatus) == .ended
            }
        }
        // Then every outbox drains: all acknowledged, nothing queued.
        try await waitUntil("every outbox drains", timeout: .seconds(300), poll: .milliseconds(500)) {
            (0..<devices).allSatisfy { device in
                guard let uplink = try? ControlClient.request(.status, path: directory + "/d\(device)/control.sock")
                    .decode(DaemonStatus.self, forKey: "status").uplinks?.first
                else { return false }
                return uplink.queued == 0 && uplink.inFlight == 0
            }
        }
        // The subscriber has what the broker acknowledged once its count stops changing.
        var total = -1, lastChange = ContinuousClock.now
        while ContinuousClock.now - lastChange < .seconds(2) {
            let now = (0..<devices).reduce(0) { $0 + subscriber.count("owntracks/fleet/d\($1)") }
            if now != total { (total, lastChange) = (now, ContinuousClock.now) }
            try await Task.sleep(for: .milliseconds(50))
        }
        let elapsed = (lastChange - start)
        let cpu = daemons.map { UplinkDrainBenchmark.cpuSeconds($0.pid) }
        let memory = daemons.map { Self.memory(pid: $0.pid) }
        let brokerPID = broker.pid ?? 0
        var lost = 0, distinct = 0
        for device in 0..<devices {
            let arrived = subscriber.arrivals("owntracks/fleet/d\(device)").count
            distinct += arrived
            lost += max(0, points - arrived)
        }
        return Result(
            devices: devices, fixesPerDevice: points, expected: points * devices, lost: lost, repeated: total - distinct,
            arrivalRate: Double(distinct) / elapsed.secondsValue, seconds: elapsed.secondsValue,
            cpuSecondsPerDevice: cpu.reduce(0, +) / Double(devices),
            rssPerDevice: memory.map(\.rss).reduce(0, +) / Double(devices),
            pssPerDevice: memory.map(\.pss).reduce(0, +) / Double(devices),
            brokerCPUSeconds: brokerCPU + UplinkDrainBenchmark.cpuSeconds(brokerPID),
            brokerRSS: Self.memory(pid: brokerPID).rss, outage: outage, speed: speed)
    }

    /// Resident and proportional set size in bytes, from /proc/PID/smaps_rollup.
    static func memory(pid: pid_t) -> (rss: Double, pss: Double) {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/smaps_rollup", encoding: .utf8) else { return (.nan, .nan) }
        func field(_ name: String) -> Double {
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }),
                let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Double($0) })
            else { return .nan }
            return kilobytes * 1024
        }
        return (field("Rss"), field("Pss"))
    }
}

extension Duration {
    fileprivate var secondsValue: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
