// Measures the gpsd source in release mode:
//   latency   time from a TPV line being written to our socket to the delegate call, p50/p99 at 10 Hz
//   cpu       process CPU time of the reduced (duty-cycled) policy vs the high (continuous) one on the
//             same 10 Hz feed from a real gpsd (gpsfake)
//   recovery  time from gpsd accepting connections again to the first delivered fix
//   acquisition  CPU time of one connect-to-first-fix acquisition (the fixed cost of each reduced cycle)
// Usage: gpsd-bench [latency|cpu|recovery|all] [--seconds N] [--interval N]
import Foundation
import LocationCore
import LocationGPSD
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

var command = "all"
var seconds = 60.0
var interval = 10.0
var arguments = Array(CommandLine.arguments.dropFirst())
while let argument = arguments.first {
    arguments.removeFirst()
    switch argument {
    case "--seconds": seconds = Double(arguments.removeFirst()) ?? seconds
    case "--interval": interval = Double(arguments.removeFirst()) ?? interval
    case "latency", "cpu", "reduced", "recovery", "acquisition", "all": command = argument
    default:
        FileHandle.standardError.write(Data("usage: gpsd-bench [latency|cpu|recovery|all] [--seconds N] [--interval N]\n".utf8))
        exit(64)
    }
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}

func measureLatency(seconds: Double) async throws {
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
    print(String(format: "latency  %d fixes at 10 Hz: p50 %.0f µs, p99 %.0f µs, max %.0f µs (line written -> delegate)",
        sorted.count, percentile(sorted, 0.5), percentile(sorted, 0.99), sorted.last ?? .nan))
}

func runPhase(_ mode: AcquisitionMode, port: Int, seconds: Double) async throws -> (cpu: Double, messages: Int, fixes: Int) {
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
    return (cpuSeconds() - before, source.messagesRead, fixes.value)
}

func measureCPU(seconds: Double, interval: Double, reducedOnly: Bool = false) async throws {
    let capture = try writeSyntheticCapture(epochs: Int((2 * seconds + 40) * 10))
    defer { try? FileManager.default.removeItem(at: capture) }
    let shm = SharedMemoryCleanup()
    defer { shm.removeNew() }
    let port = Int.random(in: 40_000...60_000)
    let gpsfake = try ChildProcess(["gpsfake", "-1", "-q", "-P", String(port), "-c", "0.05", capture.path])
    defer { gpsfake.stop() }
    // Wait for gpsd, then keep a plain client watching so the feed runs the same in both phases.
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
    if reducedOnly {
        let reduced = try await runPhase(.dutyCycled(cycle), port: port, seconds: seconds)
        print(String(format: "reduced  (every %.0f s) %.3f s CPU, %d fixes: %.0f µs per acquisition",
            interval, reduced.cpu, reduced.fixes, 1e6 * reduced.cpu / Double(max(reduced.fixes, 1))))
        return
    }
    // What the process spends with no source running (runtime timers, the bench itself), so the
    // policies can also be compared by their own cost.
    let idleBefore = cpuSeconds()
    try await Task.sleep(for: .seconds(seconds))
    let idle = cpuSeconds() - idleBefore
    let high = try await runPhase(.continuous, port: port, seconds: seconds)
    let reduced = try await runPhase(.dutyCycled(cycle), port: port, seconds: seconds)
    print(String(format: "cpu      high %.3f s CPU, %d messages, %d fixes over %.0f s", high.cpu, high.messages, high.fixes, seconds))
    print(String(format: "cpu      reduced (every %.0f s) %.3f s CPU, %d messages, %d fixes over %.0f s", interval, reduced.cpu, reduced.messages, reduced.fixes, seconds))
    print(String(format: "cpu      idle process (no source) %.3f s CPU over %.0f s", idle, seconds))
    print(String(format: "cpu      reduced / high: %.1f %% of CPU time, %.1f %% of messages",
        100 * reduced.cpu / high.cpu, 100 * Double(reduced.messages) / Double(high.messages)))
    print(String(format: "cpu      reduced / high, each less the idle process: %.1f %%",
        100 * max(0, reduced.cpu - idle) / max(high.cpu - idle, 1e-9)))
}

func measureRecovery(outage: Double) async throws {
    let cap = 5.0
    var server = try FeedServer(rateHz: 10)
    let port = server.port
    let configuration = GPSDConfiguration(
        host: "127.0.0.1", port: port, reconnectDelay: .milliseconds(250), maximumReconnectDelay: .seconds(cap))
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
    print(String(format: "recovery after a %.0f s outage: first fix %.2f s after gpsd came back (backoff cap %.0f s)",
        outage, recovery, cap))
}

func measureAcquisition(count: Int) async throws {
    let server = try FeedServer(rateHz: 10)
    defer { server.stop() }
    let source = try GPSDLocationSource(configuration: GPSDConfiguration(host: "127.0.0.1", port: server.port))
    _ = try await source.currentLocation(timeout: .seconds(5))
    for _ in 0..<3 { _ = try await source.currentLocation(timeout: .seconds(5)) }
    let before = cpuSeconds()
    for _ in 0..<count { _ = try await source.currentLocation(timeout: .seconds(5)) }
    let perAcquisition = (cpuSeconds() - before) / Double(count)
    print(String(format: "acquisition  %.0f µs CPU per connect + WATCH + first fix + close (%d runs, feed server included)",
        perAcquisition * 1e6, count))
}

if command == "reduced" { try await measureCPU(seconds: seconds, interval: interval, reducedOnly: true) }
if command == "acquisition" { try await measureAcquisition(count: 50) }
if command == "latency" || command == "all" { try await measureLatency(seconds: min(seconds, 60)) }
if command == "recovery" || command == "all" {
    for outage in [1.0, 4.0, 12.0] { try await measureRecovery(outage: outage) }
}
if command == "cpu" || command == "all" { try await measureCPU(seconds: seconds, interval: interval) }
