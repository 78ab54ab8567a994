/// Hands event lines to a bounded stream, and counts the lines a consumer that does not keep up misses,
/// so that they are reported in the stream (as a `consumer-overrun` error event) once it takes lines again.
package struct WatchRelay {
    /// Lines dropped since the last report.
    package private(set) var missed = 0

    /// Creates a relay with nothing missed.
    package init() {}

    /// Offers one line; returns `false` once the stream is terminated (the consumer has gone).
    package mutating func offer(
        _ line: [UInt8], to continuation: AsyncThrowingStream<[UInt8], any Error>.Continuation
    ) -> Bool {
        if missed > 0 {
            switch continuation.yield(Self.missedLinesEvent(missed)) {
            case .terminated: return false
            case .dropped:
                missed += 1  // no room for the report, so none for this line either
                return true
            case .enqueued: missed = 0
            @unknown default: break
            }
        }
        switch continuation.yield(line) {
        case .terminated: return false
        case .dropped: missed += 1
        case .enqueued: break
        @unknown default: break
        }
        return true
    }

    /// Ends the stream with `error`, first reporting lines still missed (in the stream if there is room,
    /// else as the error the stream ends with).
    package mutating func finish(throwing error: any Error, _ continuation: AsyncThrowingStream<[UInt8], any Error>.Continuation) {
        if missed > 0, case .dropped = continuation.yield(Self.missedLinesEvent(missed)) {
            continuation.finish(
                throwing: ControlError(.watcherLagged, "this client missed \(missed) event lines from locationd before the stream ended"))
            return
        }
        missed = 0
        continuation.finish(throwing: error)
    }

    /// The event line that stands for `count` missed lines.
    package static func missedLinesEvent(_ count: Int) -> [UInt8] {
        let plural = count == 1 ? "" : "s"
        return Array(
            #"{"type":"error","code":"consumer-overrun","message":"this client missed \#(count) event line\#(plural) from locationd while it did not keep up"}"#
                .utf8)
    }
}
