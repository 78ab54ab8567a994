import Foundation
import GPSDTestSupport
import LocationControl
import LocationCore

#if canImport(Glibc)
    import Glibc
#endif

/// What a user of an uplink feels at 1 Hz: the time from a fix on the receiver's wire to its message at a
/// subscriber of the broker, and what arrives across the broker's restart.
///
/// A real gpsd reads a receiver paced like a 9600-baud serial line (``PacedReceiver``). Beside locationd
/// (its OwnTracks uplink, QoS 1), in the same run and to the same persistent mosquitto on loopback, the
/// shell bridge people write: `gpspipe -w | jq … | mosquitto_pub -l -q 1`, jq turning each TPV with a
/// fix into an OwnTracks message. A raw socket client on gpsd stamps each epoch's last TPV as it comes
/// off the wire, the reference for both; a `mosquitto_sub` with a persistent session stamps the first
/// arrival of each fix time on each topic.
///
/// Phase one measures latency for `seconds`; phase two stops the broker for `outage` and starts it again,
/// then counts, of the fixes on the wire from the start of phase one until a few seconds before the end,
/// how many never arrived.
package enum UplinkLatencyBenchmark {
    package struct Result: Sendable {
        package struct Bridge: Sendable {
            /// Wire → subscriber, microseconds, over phase one.
            package var p50: Double
            package var p99: Double
            package var measured: Int
            /// Fixes on the wire (phase one and two) that never arrived, and how many were counted.
            package var lost: Int
            package var expected: Int
            /// CPU seconds per fix on the wire from phase one on, start-up excluded (locationd; the bridge's
            /// three processes).
            package var cpuPerFix: Double
        }
        package var locationd: Bridge
        package var shell: Bridge?
        package var outage: Double
    }

    /// The jq program of the shell bridge: each TPV with a 2D or 3D fix becomes an OwnTracks location.
    static let jqProgram = #"""
        select(.class == "TPV" and (.mode // 0) >= 2 and .lat != null and .lon != null and .time != null)
        | {_type: "location", lat, lon,
           tst: (.time | sub("\\.[0-9]+Z$"; "Z") | fromdate),
           acc: ([((.eph // .epx // 10) | ceil), 1] | max), tid: "sh"}
        """#

    package static func run(seconds: Double, outage: Double = 5) async throws -> Result? {
        guard let locationd = SiblingExecutable.path("locationd"), PacedReceiver.isAvailable,
            ExecutableLookup.path(of: "mosquitto") != nil, ExecutableLookup.path(of: "mosquitto_sub") != nil
        else { return nil }
        let shellAvailable = ["gpspipe", "jq", "mosquitto_pub"].allSatisfy { ExecutableLookup.path(of: $0) != nil }
        let directory = NSTemporaryDirectory() + "locationbench-uplink-live-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let receiver = try PacedReceiver(rateHz: 1, baud: 9_600)
        defer { receiver.stop() }
        let fd = try LoopbackTCP.connect(port: receiver.port)
        let watch = #"?WATCH={"enable":true,"json":true};"# + "\n"
        _ = watch.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        let wire = TPVArrivalRecorder(fd: fd)

        let port = try LoopbackTCP.freePort()
        let broker = try LoopbackBroker(directory: directory, port: port, persistent: true)
        defer { broker.stop() }
        let ours = "owntracks/bench/dev", theirs = "owntracks/bench/shell"
        let subscriber = try BrokerSubscriber(port: port, topics: [ours, theirs], sessionID: "locationbench-sub")
        defer { subscriber.stop() }

        let daemon = try ChildProcess([
            locationd, "--gpsd", "127.0.0.1:\(receiver.port)", "--socket", directory + "/control.sock",
            "--journal", directory + "/held.journal", "--uplink", "mqtt://127.0.0.1:\(port)/bench/dev",
        ])
        defer { daemon.stop() }
        var shell: ChildProcess?
        if shellAvailable {
            let program = directory + "/bridge.jq"
            try jqProgram.write(toFile: program, atomically: true, encoding: .utf8)
            shell = try ChildProcess([
                "sh", "-c",
                "gpspipe -w 127.0.0.1:\(receiver.port) | jq -c --unbuffered -f '\(program)' | mosquitto_pub -h 127.0.0.1 -p \(port) -t \(theirs) -q 1 -l",
            ])
        }
        defer { shell?.stop() }

        // gpsd learns the cycle and locationd's source its pattern.
        try await Task.sleep(for: .seconds(5))
        func shellCPUSeconds() -> Double? {
            shell.map { shell in
                ["gpspipe", "jq", "mosquitto_pub"].flatMap { shell.children(named: $0) }
                    .map(UplinkDrainBenchmark.cpuSeconds).reduce(0, +)
            }
        }
        let daemonCPUBefore = UplinkDrainBenchmark.cpuSeconds(daemon.pid), shellCPUBefore = shellCPUSeconds()
        let phaseOne = FeedServer.monotonicNanoseconds()
        try await Task.sleep(for: .seconds(seconds))
        let phaseTwo = FeedServer.monotonicNanoseconds()
        try await Task.sleep(for: .seconds(3))
        broker.stop()
        try await Task.sleep(for: .seconds(outage))
        try broker.start()
        try await Task.sleep(for: .seconds(15))
        let countedUntil = FeedServer.monotonicNanoseconds() - 5_000_000_000
        // What is on its way arrives.
        try await Task.sleep(for: .seconds(3))

        let daemonCPU = UplinkDrainBenchmark.cpuSeconds(daemon.pid) - daemonCPUBefore
        let shellCPU = shellCPUSeconds().map { $0 - (shellCPUBefore ?? 0) }
        let shellAlive = shell.map { shell in
            ["gpspipe", "jq", "mosquitto_pub"].filter { !shell.children(named: $0).isEmpty }
        }
        shell?.stop()
        daemon.stop()
        subscriber.stop()
        shutdown(fd, Int32(SHUT_RDWR))
        wire.wait()

        let onWire = wire.lastArrivals.value.filter { $0.value >= phaseOne && $0.value <= countedUntil }
        func bridge(_ topic: String, cpu: Double) -> Result.Bridge {
            let arrived = subscriber.arrivals(topic)
            var latencies: [Double] = []
            var lost = 0
            for (key, sent) in onWire {
                guard let arrival = arrived[Int(key / 1000)] else {
                    lost += 1
                    continue
                }
                // A message can reach the subscriber before the raw client's thread has stamped the TPV that
                // caused it (both ride on this machine's scheduling): counted as 0, not dropped.
                if sent < phaseTwo { latencies.append(arrival > sent ? Double(arrival - sent) / 1e3 : 0) }
            }
            latencies.sort()
            return Result.Bridge(
                p50: latencies.isEmpty ? .nan : Statistics.percentile(latencies, 0.5),
                p99: latencies.isEmpty ? .nan : Statistics.percentile(latencies, 0.99),
                measured: latencies.count, lost: lost, expected: onWire.count,
                cpuPerFix: cpu / Double(max(1, wire.lastArrivals.value.filter { $0.value >= phaseOne }.count)))
        }
        if let shellAlive, shellAlive.count < 3 {
            FileHandle.standardError.write(Data("locationbench: of the shell bridge, only \(shellAlive) ran to the end\n".utf8))
        }
        return Result(
            locationd: bridge(ours, cpu: daemonCPU), shell: shellCPU.map { bridge(theirs, cpu: $0) }, outage: outage)
    }
}
