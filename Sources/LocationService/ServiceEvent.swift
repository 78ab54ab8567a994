import LocationCore

/// One thing that happened, as `locationctl` prints it and `locationd` streams it to watchers.
public enum ServiceEvent: Sendable, Hashable {
    /// A delivered location.
    case location(Location)
    /// The app's lifecycle state changed.
    case state(ApplicationState)
    /// The next `count` location events are one flushed batch.
    case batch(count: Int, reason: String)
    /// Something went wrong.
    case error(LocationError)

    /// The accuracy policy that goes with a lifecycle state.
    public static func policy(for state: ApplicationState) -> AccuracyPolicy {
        state == .background || state == .suspended ? .reduced : .high
    }
}
