import Foundation
import GPSDTestSupport
import LocationCore
import LocationGPSD

#if canImport(Glibc)
    import Glibc
#endif

/// The live path from a real gpsd (gpsfake, 10 Hz) with three clients connected at the same time: our
/// `GPSDLocationSource`, `gpspipe -w`, and a raw socket client that timestamps each line as it comes off
/// the wire, the reference for both.
///
/// - Added latency: an epoch is complete when the first TPV of the next epoch arrives, so our latency is
///   delegate call − that line's arrival at the raw client; gpspipe's is its printed line − the same
///   line's arrival at the raw client.
/// - Same fix: delegate call (or gpspipe's printed line) − the first TPV of that fix on the wire; ours
///   includes waiting for the epoch to complete.
package enum LiveLatencyBenchmark {
    /// Percentiles in microseconds; nil when that client was not measured.
    package struct Result: Sendable {
        package var fixes: Int
        package var oursP50: Double
        package var oursP99: Double
        package var gpspipeP50: Double?
        package var gpspipeP99: Double?
        package var oursSameFixP50: Double
        package var gpspipeSameFixP50: Double?
    }

    /// Measures for `seconds` after a one-second warm-up.
    package static func run(seconds: Double) async throws -> Result {
        let fake = try GPSFake.start(epochs: Int((seconds + 30) * 10))
        defer { fake.stop() }
        // The raw client.
        let fd = try LoopbackTCP.connect(port: fake.port)
        let watch = #"?WATCH={"enable":true,"json":true};"# + "\n"
        _ = watch.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        let wire = TPVArrivalRecorder(fd: fd)
        // gpspipe, when installed.
        var gpspipe: ChildProcess?
        var piped: TPVArrivalRecorder?
        if ExecutableLookup.path(of: "gpspipe") != nil {
            let child = try ChildProcess(["gpspipe", "-w", "127.0.0.1:\(fake.port)"], captureStandardOutput: true)
            gpspipe = child
            piped = TPVArrivalRecorder(fd: child.standardOutput!)
        }
        // Ours.
        let delivered = Locked<[Int64: UInt64]>([:])
        let source = try GPSDLocationSource(configuration: GPSDConfiguration(host: "127.0.0.1", port: fake.port))
        let context = LocationSourceContext(clock: ContinuousClock(), mode: .continuous) { event in
            guard case .location(let location) = event else { return }
            let now = FeedServer.monotonicNanoseconds()
            delivered.withLock { $0[TPVArrivalRecorder.key(location.timestamp)] = now }
        }
        let task = Task { try await source.run(context) }
        try await Task.sleep(for: .seconds(1))
        let warmUpEnd = FeedServer.monotonicNanoseconds()
        try await Task.sleep(for: .seconds(seconds))
        task.cancel()
        _ = await task.result
        gpspipe?.stop()
        piped?.wait()
        shutdown(fd, Int32(SHUT_RDWR))
        wire.wait()

        let onWire = wire.arrivals.value
        let atPipe = piped?.arrivals.value
        let keys = onWire.keys.sorted()
        var ours: [Double] = [], pipe: [Double] = [], oursSame: [Double] = [], pipeSame: [Double] = []
        for (key, time) in delivered.value where time > warmUpEnd {
            guard let index = keys.firstIndex(of: key), index + 1 < keys.count,
                let first = onWire[key], let trigger = onWire[keys[index + 1]]
            else { continue }
            ours.append((Double(time) - Double(trigger)) / 1e3)
            oursSame.append((Double(time) - Double(first)) / 1e3)
            if let atPipe, let printed = atPipe[keys[index + 1]] { pipe.append((Double(printed) - Double(trigger)) / 1e3) }
            if let atPipe, let printed = atPipe[key] { pipeSame.append((Double(printed) - Double(first)) / 1e3) }
        }
        guard !ours.isEmpty else { throw BenchError("no fix from gpsd on port \(fake.port) was delivered") }
        ours.sort()
        pipe.sort()
        return Result(
            fixes: ours.count, oursP50: Statistics.percentile(ours, 0.5), oursP99: Statistics.percentile(ours, 0.99),
            gpspipeP50: pipe.isEmpty ? nil : Statistics.percentile(pipe, 0.5),
            gpspipeP99: pipe.isEmpty ? nil : Statistics.percentile(pipe, 0.99),
            oursSameFixP50: Statistics.median(oursSame), gpspipeSameFixP50: pipeSame.isEmpty ? nil : Statistics.median(pipeSame))
    }
}
