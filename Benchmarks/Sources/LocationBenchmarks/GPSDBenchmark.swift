import Foundation
import GPSDTestSupport
import LocationCore
import LocationGPSD
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Measurements of the gpsd source in this process: added latency against a gpsd stand-in that records
/// when it wrote each line, CPU time of the reduced vs the high policy on a real gpsd (gpsfake), recovery
/// after an outage, and the CPU cost of one acquisition.
package enum GPSDBenchmark {
    /// Latency from a line written to our socket to the delegate call, in microseconds.
    package struct Latency: Sendable {
        package var fixes: Int
        package var p50: Double
        package var p99: Double
        package var maximum: Double
    }

    /// CPU time of one policy over a phase.
    package struct Phase: Sendable {
        package var cpuSeconds: Double
        package var messages: Int
        package var fixes: Int
    }

    /// The high and reduced phases over the same feed.
    package struct CPU: Sendable {
        package var seconds: Double
        package var interval: Double
        package var high: Phase?
        package var reduced: Phase
        /// CPU time of the same process over the same time with no source running.
        package var idle: Double
        /// Reduced CPU time over high CPU time, whole process.
        package var ratio: Double? { high.map { reduced.cpuSeconds / $0.cpuSeconds } }
        /// The same ratio with the idle process's CPU taken from both: what each policy itself costs.
        package var ratioLessIdle: Double? {
            high.map { max(0, reduced.cpuSeconds - idle) / max($0.cpuSeconds - idle, 1e-9) }
        }
    }

    /// Process CPU time (user + system) so far, in seconds.
    package static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }

    /// Latency at 10 Hz against ``FeedServer`` for `seconds`: line written → delegate.
    package static func latency(seconds: Double) async throws -> Latency {
        let rate = 10.0
        let server = try FeedServer(rateHz: rate)
        defer { server.stop() }
        let source = try GPSDLocationSource(configuration: GPSDConfiguration(host: "127.0.0.1", port: server.port))
        let samples = Locked<[Double]>([])
        let context = LocationSourceContext(clock: ContinuousClock(), mode: .continuous) { event in
            guard case .location(let location) = event else { return }
            let arrived = FeedServer.monotonicNanoseconds()
            let epoch = Int(((location.timestamp.timeIntervalSince1970 - FeedServer.fixTime(ofEpoch: 0, rateHz: rate)) * rate).rounded())
            // Epoch k is complete when the first line of epoch k + 1 arrives: that line is the trigger.
            if let written = server.writeTimes.withLock({ $0[epoch + 1] }) {
                samples.withLock { $0.append(Double(arrived - written) / 1e3) }
            }
        }
        let task = Task { try await source.run(context) }
        try await Task.sleep(for: .seconds(seconds))
        task.cancel()
        _ = await task.result
        let sorted = samples.value.sorted()
        return Latency(
            fixes: sorted.count, p50: Statistics.percentile(sorted, 0.5), p99: Statistics.percentile(sorted, 0.99),
            maximum: sorted.last ?? .nan)
    }

    private static func runPhase(_ mode: AcquisitionMode, port: Int, seconds: Double) async throws -> Phase {
        let source = try GPSDLocationSource(configuration: GPSDConfiguration(host: "127.0.0.1", port: port))
        let fixes = Locked(0)
        let context = LocationSourceContext(clock: ContinuousClock(), mode: mode) { event in
            if case .location = event { fixes.withLock { $0 += 1 } }
        }
        let before = cpuSeconds()
        let task = Task { try await source.run(context) }
        try await Task.sleep(for: .seconds(seconds))
        task.cancel()
        _ = await task.result
        return Phase(cpuSeconds: cpuSeconds() - before, messages: source.messagesRead, fixes: fixes.value)
    }

    /// CPU time of the high policy and of the reduced one (one fix per `interval`) over `seconds` each of
    /// the same 10 Hz feed from a real gpsd (gpsfake). With `reducedOnly`, only the reduced phase runs.
    package static func cpu(seconds: Double, interval: Double, reducedOnly: Bool = false) async throws -> CPU {
        let fake = try GPSFake.start(epochs: Int((2 * seconds + 40) * 10))
        defer { fake.stop() }
        let port = fake.port
        // Wait for a fix, then keep a plain client watching so the feed runs the same in both phases.
        let probe = try GPSDLocationSource(configuration: GPSDConfiguration(host: "127.0.0.1", port: port))
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(30)
        var keeper: ChildProcess?
        defer { keeper?.stop() }
        var ready = false
        while !ready, clock.now < deadline {
            if keeper == nil {
                do {
                    _ = try await probe.currentLocation(timeout: .milliseconds(100))
                } catch where error.code == .sourceUnavailable {
                    try await Task.sleep(for: .milliseconds(50))
                    continue
                } catch {}
                keeper = try ChildProcess(["gpspipe", "-w", "127.0.0.1:\(port)"])
            }
            ready = (try? await probe.currentLocation(timeout: .seconds(5))) != nil
        }
        guard ready else { throw BenchError("gpsfake on port \(port) never delivered a fix") }
        let cycle = DutyCycle(interval: .seconds(interval), desiredAccuracy: nil, acquisitionTimeout: .seconds(5))
        // Warm up both code paths first (lazy symbol binding, first-use allocations), so the phases
        // measure steady-state cost.
        let warmUp = DutyCycle(interval: .seconds(1), desiredAccuracy: nil, acquisitionTimeout: .seconds(5))
        _ = try await runPhase(.dutyCycled(warmUp), port: port, seconds: 2.5)
        _ = try await runPhase(.continuous, port: port, seconds: 1)
        // What the process spends with no source running (runtime timers, the benchmark itself), so the
        // policies can also be compared by their own cost.
        let idleStart = cpuSeconds()
        try await Task.sleep(for: .seconds(seconds))
        let idle = cpuSeconds() - idleStart
        let high = reducedOnly ? nil : try await runPhase(.continuous, port: port, seconds: seconds)
        let reduced = try await runPhase(.dutyCycled(cycle), port: port, seconds: seconds)
        return CPU(seconds: seconds, interval: interval, high: high, reduced: reduced, idle: idle)
    }

    /// Seconds from the stand-in gpsd accepting connections again, after an `outage`, to the first fix.
    package static func recovery(outage: Double, backoffCap: Double = 5) async throws -> Double {
        var server = try FeedServer(rateHz: 10)
        let port = server.port
        let configuration = GPSDConfiguration(
            host: "127.0.0.1", port: port, reconnectDelay: .milliseconds(250), maximumReconnectDelay: .seconds(backoffCap))
        let source = try GPSDLocationSource(configuration: configuration)
        let lastFix = Locked<UInt64>(0)
        let context = LocationSourceContext(clock: ContinuousClock(), mode: .continuous) { event in
            if case .location = event { lastFix.withLock { $0 = FeedServer.monotonicNanoseconds() } }
        }
        let task = Task { try await source.run(context) }
        while lastFix.value == 0 { try await Task.sleep(for: .milliseconds(10)) }
        server.stop()
        try await Task.sleep(for: .seconds(outage))
        server = try FeedServer(port: port, rateHz: 10, firstEpoch: 1_000_000)
        let back = FeedServer.monotonicNanoseconds()
        while lastFix.value < back { try await Task.sleep(for: .milliseconds(5)) }
        let recovery = Double(lastFix.value - back) / 1e9
        task.cancel()
        _ = await task.result
        server.stop()
        return recovery
    }

    /// CPU seconds of one connect + WATCH + first fix + close against the stand-in (`count` runs, median-free
    /// mean; the feed server's own CPU is included).
    package static func acquisition(count: Int) async throws -> Double {
        let server = try FeedServer(rateHz: 10)
        defer { server.stop() }
        let source = try GPSDLocationSource(configuration: GPSDConfiguration(host: "127.0.0.1", port: server.port))
        _ = try await source.currentLocation(timeout: .seconds(5))
        for _ in 0..<3 { _ = try await source.currentLocation(timeout: .seconds(5)) }
        let before = cpuSeconds()
        for _ in 0..<count { _ = try await source.currentLocation(timeout: .seconds(5)) }
        return (cpuSeconds() - before) / Double(count)
    }
}
