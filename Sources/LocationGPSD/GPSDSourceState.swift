import LocationCore
import Synchronization

/// What one ``GPSDLocationSource`` remembers across its connections and acquisitions.
final class GPSDSourceState: Sendable {
    private struct Shared: Sendable {
        var inOutage = false
        var merging: EpochMerger.Memory?
    }

    private let shared = Locked(Shared())
    /// gpsd messages read over all connections, for statistics and the duty-cycle check.
    let messagesRead = Atomic<Int>(0)
    /// Fixes dropped because the consumer did not keep up (see ``GPSDReportRelay``).
    let fixesDropped = Atomic<Int>(0)
    /// Lines refused as unusable (not JSON, too long, impossible values), over all connections.
    let linesSkipped = Atomic<Int>(0)

    /// The receiver's timeline and epoch pattern as the last connection of this source left them.
    var merging: EpochMerger.Memory? {
        get { shared.withLock { $0.merging } }
        set { shared.withLock { $0.merging = newValue } }
    }

    /// Marks the start of an outage; returns `true` only for the first failure of an outage.
    func beginOutage() -> Bool {
        shared.withLock { state in
            defer { state.inOutage = true }
            return !state.inOutage
        }
    }

    /// Marks that data flows again.
    func endOutage() {
        shared.withLock { $0.inOutage = false }
    }
}
