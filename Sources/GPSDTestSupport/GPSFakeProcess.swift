import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A private gpsd started by `gpsfake` on a loopback port, replaying one capture: gpsfake in a process
/// group of its own, which its gpsd joins, and the shared memory that gpsd leaves, counted in
/// ``GPSDSharedMemory``'s ledger from start to ``stop()``.
///
/// In port mode gpsd drops what the capture says before the first client watches: connect as soon as
/// ``waitUntilAccepting(timeout:)`` returns. gpsfake adds its device a moment after gpsd accepts
/// connections; a client that watches before then still gets the device's reports once it is added.
public final class GPSFakeProcess: Sendable {
    /// The port gpsd listens on, on 127.0.0.1.
    public let port: Int
    /// gpsfake itself.
    public let process: ChildProcess
    private let stopped = Atomic<Bool>(false)

    /// Whether gpsfake and gpsd are both installed.
    public static var isInstalled: Bool { ExecutableLookup.gpsfake != nil && ExecutableLookup.gpsd != nil }

    /// Starts `gpsfake -1 -q -P port options... capture` (`port` nil picks a free one); does not wait.
    public init(capture: String, port: Int? = nil, options: [String] = ["-c", "0.05"]) throws(TestSupportError) {
        let install = "apt-get install gpsd gpsd-clients python3-gps"
        guard let gpsfake = ExecutableLookup.gpsfake else { throw .notInstalled(program: "gpsfake", install: install) }
        guard ExecutableLookup.gpsd != nil else { throw .notInstalled(program: "gpsd", install: install) }
        if let port {
            self.port = port
        } else {
            self.port = try LoopbackTCP.freePort()
        }
        // gpsfake finds gpsd on PATH, which may lack the sbin folders.
        let path = (ProcessInfo.processInfo.environment["PATH"].map { [$0] } ?? []) + ExecutableLookup.systemFolders
        GPSDSharedMemory.processStarted()
        do {
            process = try ChildProcess(
                [gpsfake, "-1", "-q", "-P", String(self.port)] + options + [capture],
                environment: ["PATH": path.joined(separator: ":")])
        } catch {
            GPSDSharedMemory.processEnded()
            throw error
        }
    }

    deinit { stop() }

    /// The gpsd that gpsfake started, while it runs.
    public var gpsdPID: pid_t? { process.children(named: "gpsd").first }

    /// Whether gpsd accepts connections now; the first time it does, its process is noted as ours, so the
    /// shared memory it creates is removed later.
    /// The port was picked free and bound by gpsd later, so another program may have taken it in between:
    /// only a listener that is this gpsd's counts.
    public func isAccepting() -> Bool {
        guard LoopbackTCP.accepts(port: port), let gpsd = gpsdPID, LoopbackTCP.isListening(port: port, pid: gpsd) else {
            return false
        }
        GPSDSharedMemory.daemonStarted(gpsd)
        return true
    }

    /// Waits, polling, until gpsd accepts connections.
    public func waitUntilAccepting(timeout: Duration = .seconds(20)) throws(TestSupportError) {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while !isAccepting() {
            guard clock.now < deadline else { throw notAccepting(timeout) }
            usleep(5_000)
        }
    }

    /// Waits, polling without blocking a thread, until gpsd accepts connections.
    public func waitUntilAccepting(timeout: Duration = .seconds(20)) async throws(TestSupportError) {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while !isAccepting() {
            guard clock.now < deadline else { throw notAccepting(timeout) }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Waits, polling, until gpsd lists gpsfake's device, at most `timeout`; returns whether it did.
    ///
    /// Best effort (once in CI a gpsd listed no device for 20 s, for reasons not known). A command that
    /// asks gpsd for its devices once before watching needs this; a client that watches does not.
    @discardableResult
    public func waitUntilDeviceListed(timeout: Duration = .seconds(10)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if listsDevice() { return true }
            usleep(50_000)
        }
        return false
    }

    /// Whether gpsd's reply to `?DEVICES;` lists a device.
    public func listsDevice() -> Bool {
        guard let fd = try? LoopbackTCP.connect(port: port) else { return false }
        defer { close(fd) }
        let request = Array("?DEVICES;\n".utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else {
            return false
        }
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = ContinuousClock.now + .milliseconds(500)
        var descriptors = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
        // The greeting comes first; the DEVICES line is the reply.
        while ContinuousClock.now < deadline, !String(decoding: reply, as: UTF8.self).contains(#""class":"DEVICES""#) {
            guard poll(&descriptors, 1, 100) > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            reply += buffer[..<count]
        }
        return String(decoding: reply, as: UTF8.self).contains(#""devices":[{"#)
    }

    /// Ends gpsfake and its gpsd (SIGTERM, which gpsfake passes on to gpsd; SIGKILL of the group after
    /// 3 s) and removes gpsd's export segment and, when it was the last, the NTP ones; safe to call again.
    public func stop() {
        process.stop()
        guard !stopped.exchange(true, ordering: .sequentiallyConsistent) else { return }
        GPSDSharedMemory.remove(key: GPSDSharedMemory.exportKey(port: port))
        GPSDSharedMemory.processEnded()
    }

    private func notAccepting(_ timeout: Duration) -> TestSupportError {
        var state = process.reap().map { "gpsfake ended with \($0)" } ?? "gpsfake still runs"
        if LoopbackTCP.accepts(port: port) { state += "; another program listens on the port" }
        return .timedOut("gpsd on port \(port) did not accept connections within \(timeout) (\(state))")
    }
}
