import LocationCore

/// One thing that happened, as `locationctl` prints it and `locationd` streams it to watchers.
public enum ControlEvent: Sendable, Hashable {
    /// A delivered location.
    case location(Location)
    /// The app's lifecycle state changed.
    case state(ApplicationState)
    /// A flushed held batch, oldest first, carried whole as one event (one line on the wire). From locationd
    /// it has an `id`: the consumer acknowledges the batch with it (``ControlRequest/acknowledge(batch:)``)
    /// once it has the fixes.
    case batch([Location], reason: String, id: String? = nil)
    /// Something went wrong.
    case error(LocationError)
    /// The receiver's fix state, for a person watching: `noFix` while it waits for a fix (with the
    /// satellites it sees, when known; repeated when that count changes), then `hasFix` when the fix comes.
    /// ``ControlEventRecorder`` reports `hasFix` only after a `noFix`, so a source that has a fix from the
    /// start (a replay) adds no line.
    case source(LocationSourceStatus, satellitesVisible: Int?)

    /// The accuracy policy that goes with a lifecycle state.
    public static func policy(for state: ApplicationState) -> AccuracyPolicy {
        state == .background || state == .suspended ? .reduced : .high
    }
}
