import Foundation
import GPSDTestSupport
import LocationCore

/// A real gpsd on a private loopback port reading a never-ending feed (``NMEAFeedServer``), that a test
/// can kill and start again on the same port as often as it likes, the receiver running on meanwhile.
///
/// Each gpsd runs in a process group of its own with standard streams on /dev/null. ``stop()`` ends it
/// and removes the System V shared memory it left: its export segment (key derived from the port, as
/// gpsfake does) and, through ``GPSDSharedMemory``'s ledger, the NTP segments our gpsd processes created.
final class GPSDProcess: Sendable {
    static let executable: String? = ExecutableLookup.gpsd

    private struct State: Sendable {
        /// The gpsd running now.
        var current: ChildProcess?
        /// Whether this instance is counted in the shared-memory ledger (from its first start to stop()).
        var counted = false
    }

    let port: Int
    let feedPort: Int
    private let state = Locked(State())

    init(feedPort: Int) throws {
        guard Self.executable != nil else { throw LocationServiceTestFailure("gpsd is not installed") }
        self.feedPort = feedPort
        port = try LoopbackTCP.freePort()
    }

    deinit { stop() }

    /// The export segment's key: gpsfake's scheme, so no two test gpsd share one.
    var sharedMemoryKey: Int32 { GPSDSharedMemory.exportKey(port: port) }

    /// Starts gpsd (`-N -n -b -S port tcp://127.0.0.1:feed`) and waits until it accepts connections;
    /// returns that moment.
    @discardableResult
    func start(timeout: TimeInterval = 20) throws -> ContinuousClock.Instant {
        let gpsd = try state.withLock { state in
            guard state.current == nil else { throw LocationServiceTestFailure("gpsd is already running") }
            if !state.counted {
                GPSDSharedMemory.processStarted()
                state.counted = true
            }
            let gpsd = try ChildProcess(
                [Self.executable!, "-N", "-n", "-b", "-S", String(port), "tcp://127.0.0.1:\(feedPort)"],
                environment: ["GPSD_SHM_KEY": String(format: "0x%08x", UInt32(bitPattern: sharedMemoryKey))])
            state.current = gpsd
            return gpsd
        }
        GPSDSharedMemory.daemonStarted(gpsd.pid)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            // Only gpsd's own listener counts: the port was picked free earlier, and another program may
            // have taken it since.
            if LoopbackTCP.accepts(port: port), LoopbackTCP.isListening(port: port, pid: gpsd.pid) { return .now }
            if let ended = gpsd.reap() {
                state.withLock { $0.current = nil }
                throw LocationServiceTestFailure("gpsd on port \(port) exited at start (\(ended))")
            }
            usleep(2_000)
        }
        throw LocationServiceTestFailure("gpsd on port \(port) did not accept connections within \(timeout) s")
    }

    /// Sends `signal` to the running gpsd and waits until it has exited (SIGKILL after 10 s).
    func kill(_ signal: Int32 = SIGKILL) {
        guard let gpsd = state.withLock({ $0.current }) else { return }
        gpsd.stop(signal: signal, grace: .seconds(10))
        state.withLock { $0.current = nil }
    }

    /// Ends gpsd for good and removes the shared memory it left.
    func stop() {
        kill(SIGTERM)
        guard state.withLock({ state in defer { state.counted = false }; return state.counted }) else { return }
        GPSDSharedMemory.remove(key: sharedMemoryKey)
        GPSDSharedMemory.processEnded()
    }
}
