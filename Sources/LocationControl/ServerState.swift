#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Everything about a running server that more than one thread touches; guarded by one lock.
struct ServerState: Sendable {
    /// Open connections by id.
    var connections: [UInt64: ConnectionState] = [:]
    /// The id the next accepted connection gets; ids are never reused.
    var nextID: UInt64 = 1
    /// How many connections are watchers.
    var watcherCount = 0
    /// `stop()` was called; the loop exits at its next turn.
    var stopping = false
    /// The loop has exited and closed every descriptor; nothing may use them any more.
    var stopped = false
    /// The event loop thread, joined by `stop()`.
    var thread: pthread_t?
    /// A spare descriptor given up to accept-and-refuse a connection when the process is out of descriptors.
    var reserveFD: Int32 = -1
    /// While set, the listener is not polled: accepting failed for lack of resources and would only spin.
    var acceptPausedUntil: ContinuousClock.Instant?
}

extension ServerState {
    /// Whether the output held for every connection together (replies and events) has reached
    /// ``ControlServerConfiguration/maxTotalOutputBuffer``.
    func outputOverTotal(_ configuration: ControlServerConfiguration) -> Bool {
        var total = 0
        for connection in connections.values {
            total += connection.output.count
            if total >= configuration.maxTotalOutputBuffer { return true }
        }
        return false
    }
}
