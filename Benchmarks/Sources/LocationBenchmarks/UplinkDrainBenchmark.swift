import Foundation
import GPSDTestSupport
import LocationControl
import LocationCore

#if canImport(Glibc)
    import Glibc
#endif

/// What an uplink does with a backlog: a locationd whose outbox holds `fixes` fixes (queued while no broker
/// was there) is started beside a mosquitto broker on loopback, and the time from its start to the last of
/// them arriving at a subscriber (QoS 1) gives the drain rate, start-up and the outbox's loading included;
/// its CPU time over the drain gives the CPU per published fix.
///
/// The peer, in the same run: `mosquitto_pub -l -q 1`, the publishing end of a shell bridge
/// (`gpspipe -w | … | mosquitto_pub -l -q 1`), fed the same number of OwnTracks lines from a file, to the same
/// broker and subscriber. It keeps its messages in libmosquitto's memory, with no outbox.
package enum UplinkDrainBenchmark {
    package struct Result: Sendable {
        /// Fixes per second from locationd's start to the last arrival (median).
        package var rate: Double
        /// locationd's CPU seconds per published fix (median).
        package var cpuPerFix: Double
        /// The peer's messages per second and CPU seconds per message (medians).
        package var peerRate: Double
        package var peerCPUPerFix: Double
        package var fixes: Int
        package var window: Int
        /// The fewest of the peer's `fixes` lines that reached the subscriber in a run.
        package var peerArrived: Int
    }

    package static func run(runs: Int, fixes: Int = 100_000, window: Int = 10) async throws -> Result? {
        guard let locationd = SiblingExecutable.path("locationd"), ExecutableLookup.path(of: "mosquitto") != nil,
            ExecutableLookup.path(of: "mosquitto_sub") != nil
        else { return nil }
        let directory = NSTemporaryDirectory() + "locationbench-uplink-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let track = directory + "/track.gpx"
        try GPXBenchFile.generate(path: track, points: fixes)
        let single = directory + "/single.gpx"
        try GPXBenchFile.generate(path: single, points: 1)
        var rates: [Double] = [], cpus: [Double] = [], peerRates: [Double] = [], peerCPUs: [Double] = []
        var smallest = Int.max, peerArrived = Int.max
        for run in 0..<max(1, runs) {
            let state = directory + "/run\(run)"
            try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let port = try LoopbackTCP.freePort()
            let socket = state + "/control.sock"
            let arguments = [
                "--socket", socket, "--journal", state + "/held.journal",
                "--uplink", "mqtt://127.0.0.1:\(port)/bench/dev?window=\(window)&queue=\(fixes + 1000)",
            ]
            // The backlog: the whole replay queued while no broker listens (counted once the replay ended).
            var backlog = 0
            do {
                let filling = try ChildProcess([locationd, "--replay", track, "--speed", "1000000"] + arguments)
                defer { filling.stop() }
                try await waitUntil("locationd's replay ends", timeout: .seconds(300)) {
                    (try? ControlClient.request(.status, path: socket).decode(DaemonStatus.self, forKey: "status").sourceStatus) == .ended
                }
                var steady = 0
                while steady < 3 {
                    try await Task.sleep(for: .milliseconds(100))
                    let now = try Self.uplink(socket: socket)?.queued ?? 0
                    steady = now == backlog ? steady + 1 : 0
                    backlog = now
                }
            }
            guard backlog > 0 else { throw BenchError("nothing was queued") }
            let broker = try LoopbackBroker(directory: state, port: port)
            defer { broker.stop() }

            var topic = "owntracks/bench/dev"
            var counter = try BrokerSubscriber(port: port, topics: [topic])
            let start = ContinuousClock.now
            let draining = try ChildProcess([locationd, "--replay", single, "--speed", "1"] + arguments)
            defer { draining.stop() }
            try await waitUntil("the backlog arrives", timeout: .seconds(600), poll: .milliseconds(5)) { counter.count(topic) >= backlog }
            rates.append(Double(backlog) / (ContinuousClock.now - start).secondsValue)
            cpus.append(Self.cpuSeconds(draining.pid) / Double(backlog))
            smallest = min(smallest, backlog)

            // The peer, on the same broker: the same number of lines through mosquitto_pub -l.
            let lines = directory + "/lines\(run).txt"
            var text = ""
            text.reserveCapacity(fixes * 160)
            for index in 0..<fixes {
                text += #"{"_type":"location","lat":52.5\#(index % 10000),"lon":13.4,"tst":\#(1_700_000_000 + index),"acc":5,"tid":"pe","created_at":1700000000}"#
                text += "\n"
            }
            try text.write(toFile: lines, atomically: true, encoding: .utf8)
            counter.stop()
            topic = "owntracks/bench/peer"
            counter = try BrokerSubscriber(port: port, topics: [topic])
            let childrenBefore = Self.childrenCPUSeconds()
            let peerStart = ContinuousClock.now
            let peer = try ChildProcess([
                "sh", "-c", "exec mosquitto_pub -h 127.0.0.1 -p \(port) -t owntracks/bench/peer -q 1 -l < '\(lines)'",
            ])
            // It exits once its input ended (whether or not everything was sent: what arrived is counted).
            _ = await peer.waitForExit(timeout: .seconds(600))
            var arrived = -1, lastChange = ContinuousClock.now
            while ContinuousClock.now - lastChange < .seconds(2), arrived < fixes {
                let now = counter.count(topic)
                if now != arrived { (arrived, lastChange) = (now, ContinuousClock.now) }
                try await Task.sleep(for: .milliseconds(5))
            }
            peerRates.append(Double(arrived) / (lastChange - peerStart).secondsValue)
            peerArrived = min(peerArrived, arrived)
            peerCPUs.append((Self.childrenCPUSeconds() - childrenBefore) / Double(fixes))
            counter.stop()
        }
        return Result(
            rate: Statistics.median(rates), cpuPerFix: Statistics.median(cpus), peerRate: Statistics.median(peerRates),
            peerCPUPerFix: Statistics.median(peerCPUs), fixes: smallest, window: window, peerArrived: peerArrived)
    }

    /// A process's CPU time so far (user and system), from /proc.
    static func cpuSeconds(_ pid: pid_t) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return .nan }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // utime and stime are fields 14 and 15; after the command's ")" they are the 12th and 13th.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return .nan }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The CPU time of the reaped children so far (user and system).
    static func childrenCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    private static func uplink(socket: String) throws -> UplinkStatus? {
        try ControlClient.request(.status, path: socket).decode(DaemonStatus.self, forKey: "status").uplinks?.first
    }
}

extension Duration {
    fileprivate var secondsValue: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
