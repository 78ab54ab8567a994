import Foundation
import GPSDTestSupport
import LocationCore
import LocationGPSD

#if canImport(Glibc)
    import Glibc
#endif

/// The live path from a real gpsd reading a receiver paced like a serial line (``PacedReceiver``), with
/// three clients connected at the same time: our `GPSDLocationSource`, `gpspipe -w`, and a raw socket
/// client that timestamps each line as it comes off the wire, the reference for both.
///
/// - Last TPV → delivered: the delegate call − the arrival (at the raw client) of the epoch's last TPV,
///   the one that completes it. gpspipe's counterpart is its printing of that same line.
/// - First TPV → delivered: the delegate call − the arrival of the epoch's first TPV; gpspipe's
///   counterpart is its printing of that first TPV (it prints each TPV as is, complete or not).
package enum LiveLatencyBenchmark {
    /// Percentiles in microseconds; nil when gpspipe was not measured.
    package struct Result: Sendable {
        package var rateHz: Int
        package var baud: Int
        package var fixes: Int
        /// TPVs per epoch, as gpsd sent them.
        package var reportsPerEpoch: Double
        package var lastP50: Double
        package var lastP99: Double
        package var gpspipeLastP50: Double?
        package var gpspipeLastP99: Double?
        package var firstP50: Double
        package var gpspipeFirstP50: Double?
    }

    /// Measures for `seconds` after a warm-up long enough for the source to learn the receiver's pattern.
    package static func run(seconds: Double, rateHz: Int) async throws -> Result {
        let baud = rateHz == 1 ? 9_600 : 38_400
        let receiver = try PacedReceiver(rateHz: rateHz, baud: baud)
        defer { receiver.stop() }
        let fd = try LoopbackTCP.connect(port: receiver.port)
        let watch = #"?WATCH={"enable":true,"json":true};"# + "\n"
        _ = watch.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        let wire = TPVArrivalRecorder(fd: fd)
        var gpspipe: ChildProcess?
        var piped: TPVArrivalRecorder?
        if ExecutableLookup.path(of: "gpspipe") != nil {
            let child = try ChildProcess(["gpspipe", "-w", "127.0.0.1:\(receiver.port)"], captureStandardOutput: true)
            gpspipe = child
            piped = TPVArrivalRecorder(fd: child.standardOutput!)
        }
        let delivered = Locked<[Int64: UInt64]>([:])
        let source = try GPSDLocationSource(configuration: GPSDConfiguration(host: "127.0.0.1", port: receiver.port))
        let context = LocationSourceContext(clock: ContinuousClock(), mode: .continuous) { event in
            guard case .location(let location) = event else { return }
            let now = FeedServer.monotonicNanoseconds()
            delivered.withLock { $0[TPVArrivalRecorder.key(location.timestamp)] = now }
        }
        let task = Task { try await source.run(context) }
        // gpsd learns the cycle, then the source learns its pattern (2 s of epochs).
        try await Task.sleep(for: .seconds(5))
        let warmUpEnd = FeedServer.monotonicNanoseconds()
        try await Task.sleep(for: .seconds(seconds))
        task.cancel()
        _ = await task.result
        gpspipe?.stop()
        piped?.wait()
        shutdown(fd, Int32(SHUT_RDWR))
        wire.wait()

        let first = wire.arrivals.value, last = wire.lastArrivals.value
        let pipeFirst = piped?.arrivals.value, pipeLast = piped?.lastArrivals.value
        var ours: [Double] = [], oursFirst: [Double] = [], pipe: [Double] = [], pipeFirstTimes: [Double] = []
        for (key, time) in delivered.value where time > warmUpEnd {
            guard let completed = last[key], let started = first[key] else { continue }
            ours.append((Double(time) - Double(completed)) / 1e3)
            oursFirst.append((Double(time) - Double(started)) / 1e3)
            if let printed = pipeLast?[key] { pipe.append((Double(printed) - Double(completed)) / 1e3) }
            if let printed = pipeFirst?[key] { pipeFirstTimes.append((Double(printed) - Double(started)) / 1e3) }
        }
        guard !ours.isEmpty else { throw BenchError("no fix from gpsd on port \(receiver.port) was delivered") }
        ours.sort()
        pipe.sort()
        let reports = Double(wire.reports.value) / Double(max(1, first.count))
        return Result(
            rateHz: rateHz, baud: baud, fixes: ours.count, reportsPerEpoch: reports,
            lastP50: Statistics.percentile(ours, 0.5), lastP99: Statistics.percentile(ours, 0.99),
            gpspipeLastP50: pipe.isEmpty ? nil : Statistics.percentile(pipe, 0.5),
            gpspipeLastP99: pipe.isEmpty ? nil : Statistics.percentile(pipe, 0.99),
            firstP50: Statistics.median(oursFirst), gpspipeFirstP50: pipeFirstTimes.isEmpty ? nil : Statistics.median(pipeFirstTimes))
    }
}
