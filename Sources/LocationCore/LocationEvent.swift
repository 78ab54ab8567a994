/// One thing a ``LocationManager`` tells its app, in the order it happened.
///
/// Every event leaves the manager through one ordered queue and reaches, in that order, the delegate
/// (``LocationManagerDelegate/locationManager(_:didReceive:)``) and every iterator of
/// ``LocationManager/events``. So a lifecycle change always comes before the held batch it flushes, and
/// a batch before the live fixes that follow it.
public enum LocationEvent: Sendable, Hashable {
    /// Locations, oldest first, never empty: one fix while live, or a whole held batch at once.
    case locations([Location], LocationDelivery)
    /// The app's lifecycle moved on; ``ApplicationEvent/resultingState`` is the state it is now in.
    case lifecycle(ApplicationEvent)
    /// The app stopped running, and why. A purge or a kill while suspended sends the app no message (no
    /// ``lifecycle(_:)`` event), so this is how its host learns of it; the manager then stops updating,
    /// and what it held stays in the journal for the next launch.
    case applicationStopped(ApplicationTerminationReason)
    /// The accuracy policy changed (the app moved between foreground and background).
    case accuracyPolicy(AccuracyPolicy)
    /// The source's connection or fix state changed.
    case sourceStatus(LocationSourceStatus)
    /// While the source has no fix: how many satellites the receiver sees.
    case satellitesInView(Int)
    /// Something went wrong: the source failed or lost its fix, no fix came in time, the journal failed.
    case error(LocationError)
    /// Held fixes were dropped because the batch was full; comes just before the batch is delivered.
    case droppedHeldLocations(Int)
    /// A monitored region was entered, left or dwelt in (see ``RegionMonitor``): after the locations event
    /// that carried the fix that caused it, in fix-time order.
    case region(RegionEvent)
    /// The receiver stopped or started moving (see ``MotionDetector``; only with
    /// ``LocationManagerConfiguration/motion`` set): after the locations event of the fix that decided it.
    case motion(MotionEvent)
}

/// How the locations of one ``LocationEvent/locations(_:_:)`` event reached the app.
public enum LocationDelivery: Sendable, Hashable {
    /// As the fix arrived (or the one fix of a ``LocationManager/requestLocation()``).
    case live
    /// A batch of fixes that were held, delivered at once.
    case held(HeldBatchReason)
}

/// Why a held batch was delivered.
public enum HeldBatchReason: String, Sendable, Hashable, Codable, CaseIterable {
    /// The app returned to the foreground (`willEnterForeground`).
    case foreground
    /// Fixes restored from the journal of an earlier run, delivered when the app first became active.
    case restored
    /// Fixes a holder sent before and no consumer acknowledged (locationd's outbox), sent again to the next
    /// consumer.
    case unacknowledged
    /// Live fixes deferred under ``LocationManagerConfiguration/maximumUpdateDelay``, delivered together
    /// once the oldest had waited that long, or at ``LocationManager/flush()``.
    case deferred
}
