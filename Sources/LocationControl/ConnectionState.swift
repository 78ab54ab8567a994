#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LocationCore

/// What the event loop hands to a connection's request task.
enum ConnectionInput: Sendable {
    /// One complete request line, without `\n`.
    case line([UInt8])
    /// A request line exceeded the limit; reply and close.
    case tooLarge
}

/// One client connection as the server sees it. Lives in the server's locked state and is only ever
/// mutated in place there (`connections[id]?.…`), so its buffers are never copied.
struct ConnectionState: Sendable {
    /// The connected socket; closed only by the event loop thread.
    let fd: Int32
    /// Bytes received and not yet handed to the task: whole lines held back while ``pendingRequests`` is at
    /// its limit, then the start of the next line.
    var input: [UInt8] = []
    /// The client shut its sending side; input ends once the lines held in ``input`` are handed over.
    var peerFinishedSending = false
    /// Replies and events not yet written.
    var output = OutputBuffer()
    /// Feeds request lines, in order, to the connection's task.
    let requests: AsyncStream<ConnectionInput>.Continuation
    /// The task answering this connection's requests in order.
    var task: Task<Void, Never>?
    /// Requests handed to the task and not yet answered.
    var pendingRequests = 0
    /// No more input is read: end of file, an oversized line, or a close was asked for.
    var inputClosed = false
    /// Close once `output` is written (after an oversized line, or when the client half-closed).
    var closeWhenFlushed = false
    /// Close at the loop's next turn: the peer is gone or the socket failed.
    var closeNow = false
    /// Whether the connection receives broadcast events.
    var isWatcher = false
    /// Events dropped since the output buffer filled; reported once it drains.
    var missedEvents = 0
    /// Of those, the fixes of held batches missed whole.
    var missedHeldFixes = 0
    /// When the connection is closed if it keeps not reading; set only while output is pending.
    var stallDeadline: ContinuousClock.Instant?
    /// The connecting process's user (SO_PEERCRED), for sharing connections fairly between users.
    var peerUID: UInt32 = .max

    /// Whether the connection holds nothing in flight: not a watcher, no request pending or half-read, no
    /// output waiting. Such a connection may be closed to make room for a new client.
    var isIdle: Bool {
        !isWatcher && pendingRequests == 0 && input.isEmpty && output.isEmpty && !closeNow
    }

    init(fd: Int32, requests: AsyncStream<ConnectionInput>.Continuation) {
        self.fd = fd
        self.requests = requests
    }

    /// Whether the loop should poll for input: open, not too far ahead of its replies, output not over its limit.
    ///
    /// `overTotal`: every connection's output together has reached ``ControlServerConfiguration/maxTotalOutputBuffer``;
    /// then a connection may only ask while nothing of its own waits (no reply unread, none being answered),
    /// so that clients that ask without reading cannot fill memory between them.
    func wantsInput(_ configuration: ControlServerConfiguration, overTotal: Bool) -> Bool {
        !inputClosed && !closeNow && !peerFinishedSending && mayHandOver(configuration, overTotal: overTotal)
            && !input.contains(UInt8(ascii: "\n"))
    }

    /// Whether another request may go to the task now (see ``wantsInput(_:overTotal:)``).
    func mayHandOver(_ configuration: ControlServerConfiguration, overTotal: Bool) -> Bool {
        overTotal
            ? pendingRequests == 0 && output.isEmpty
            : pendingRequests < configuration.maxPendingRequests && output.count < configuration.maxOutputBuffer
    }

    /// Queues an event line for a watcher within the buffer limit; returns whether it was queued.
    ///
    /// Once a line does not fit, this and every later line are counted as missed until the buffer drains,
    /// so the watcher sees a gap marked by one `watcher-lagged` line, never a silently thinned stream.
    ///
    /// A held batch (`heldFixes` > 0: its batch line and location lines in one unit) is queued whole or not at
    /// all, whatever its size, while the watcher is keeping up (nothing missed, its buffer within the limit):
    /// a batch larger than the buffer must still reach a watcher that reads. Its bytes are shared by every
    /// watcher it is queued to. A batch missed is named in the `watcher-lagged` line.
    mutating func enqueueEvent(_ line: [UInt8], limit: Int, heldFixes: Int = 0) -> Bool {
        guard !closeNow, !closeWhenFlushed else { return false }
        let fits = heldFixes > 0 ? output.count <= limit : output.count + line.count <= limit
        if missedEvents > 0 || !fits {
            missedEvents += 1
            missedHeldFixes += heldFixes
            return false
        }
        output.append(line)
        return true
    }

    /// Writes what the socket takes; reports missed events once drained; keeps the stall deadline current.
    mutating func flush(stallTimeout: Duration) {
        guard !closeNow else { return }
        var progressed = false
        while true {
            if output.isEmpty {
                guard missedEvents > 0 else { break }
                let batches = missedHeldFixes > 0 ? ", among them \(missedHeldFixes.counted("held fix"))" : ""
                output.append(JSONText.errorEventLine(
                    code: ControlError.Code.watcherLagged.rawValue,
                    message: "missed \(missedEvents) events\(batches)"))
                missedEvents = 0
                missedHeldFixes = 0
            }
            switch output.write(to: fd) {
            case .drained:
                progressed = true
                continue
            case .blocked(let didWrite):
                progressed = progressed || didWrite
            case .failed:
                closeNow = true
            }
            break
        }
        if output.isEmpty || closeNow {
            stallDeadline = nil
        } else if progressed || stallDeadline == nil {
            stallDeadline = .now + stallTimeout
        }
    }
}
