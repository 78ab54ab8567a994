/// Receives a ``LocationManager``'s events, like a `CLLocationManagerDelegate`.
///
/// The delegate is an adapter over the manager's one ordered stream of ``LocationEvent``s: every event
/// reaches ``locationManager(_:didReceive:)``, whose default implementation calls the specific method for
/// its kind. Implement the specific methods you need, or `didReceive` to see everything in one place
/// (lifecycle changes have no method of their own).
///
/// Calls are never concurrent and come in the order the events happened, each after the previous one
/// returned. They run on no particular executor: on the thread or task that caused the event (the
/// source's task for a fix, the caller of a lifecycle transition), so a delegate must be `Sendable` and
/// should hand long work elsewhere. A delegate that keeps state does so behind a lock (see `Mutex` in
/// the `Synchronization` module) or in an actor it sends the values to.
public protocol LocationManagerDelegate: AnyObject, Sendable {
    /// Every event, in order. The default implementation calls the specific method for the event's kind.
    func locationManager(_ manager: LocationManager, didReceive event: LocationEvent)
    /// New locations, oldest first, never empty: one per fix while live, or a whole held batch at once
    /// when the app returns to the foreground.
    func locationManager(_ manager: LocationManager, didUpdateLocations locations: [Location])
    /// Something went wrong: the source failed or lost its fix, no fix came in time, the journal failed.
    func locationManager(_ manager: LocationManager, didFailWithError error: LocationError)
    /// The accuracy policy changed (the app moved between foreground and background).
    func locationManager(_ manager: LocationManager, didChangeAccuracyPolicy policy: AccuracyPolicy)
    /// The source's connection or fix state changed.
    func locationManager(_ manager: LocationManager, didChangeSourceStatus status: LocationSourceStatus)
    /// While the source has no fix: how many satellites the receiver sees (see
    /// ``LocationSourceEvent/satellitesInView(_:)``).
    func locationManager(_ manager: LocationManager, didUpdateSatellitesInView count: Int)
    /// Held fixes were dropped because the batch was full; sent just before the batch is delivered.
    func locationManager(_ manager: LocationManager, didDropHeldLocations count: Int)
    /// A monitored region was entered, left or dwelt in, at the event's fix.
    func locationManager(_ manager: LocationManager, didUpdateRegion event: RegionEvent)
    /// The receiver stopped or started moving (with ``LocationManagerConfiguration/motion`` set).
    func locationManager(_ manager: LocationManager, didChangeMotion event: MotionEvent)
    /// The next `didUpdateLocations` call carries `count` held fixes, flushed because the app returned to
    /// the foreground (or restored from the journal), rather than a live fix.
    func locationManager(_ manager: LocationManager, willDeliverHeldLocations count: Int)
}

extension LocationManagerDelegate {
    /// Calls the specific method for the event's kind; a held batch is announced with
    /// ``locationManager(_:willDeliverHeldLocations:)`` first.
    public func locationManager(_ manager: LocationManager, didReceive event: LocationEvent) {
        callSpecificMethod(for: event, from: manager)
    }

    /// Calls the specific method for the event's kind, as the default ``locationManager(_:didReceive:)``
    /// does; for a delegate that implements `didReceive` and still wants its specific methods called.
    package func callSpecificMethod(for event: LocationEvent, from manager: LocationManager) {
        switch event {
        case .locations(let locations, let delivery):
            if case .held = delivery { locationManager(manager, willDeliverHeldLocations: locations.count) }
            locationManager(manager, didUpdateLocations: locations)
        case .error(let error): locationManager(manager, didFailWithError: error)
        case .accuracyPolicy(let policy): locationManager(manager, didChangeAccuracyPolicy: policy)
        case .sourceStatus(let status): locationManager(manager, didChangeSourceStatus: status)
        case .satellitesInView(let count): locationManager(manager, didUpdateSatellitesInView: count)
        case .droppedHeldLocations(let count): locationManager(manager, didDropHeldLocations: count)
        case .region(let event): locationManager(manager, didUpdateRegion: event)
        case .motion(let event): locationManager(manager, didChangeMotion: event)
        case .lifecycle, .applicationStopped: break
        }
    }
    /// Does nothing.
    public func locationManager(_ manager: LocationManager, didUpdateLocations locations: [Location]) {}
    /// Does nothing.
    public func locationManager(_ manager: LocationManager, didFailWithError error: LocationError) {}
    /// Does nothing.
    public func locationManager(_ manager: LocationManager, didChangeAccuracyPolicy policy: AccuracyPolicy) {}
    /// Does nothing.
    public func locationManager(_ manager: LocationManager, didChangeSourceStatus status: LocationSourceStatus) {}
    /// Does nothing.
    public func locationManager(_ manager: LocationManager, didUpdateSatellitesInView count: Int) {}
    /// Does nothing.
    public func locationManager(_ manager: LocationManager, didDropHeldLocations count: Int) {}
    /// Does nothing.
    public func locationManager(_ manager: LocationManager, didUpdateRegion event: RegionEvent) {}
    /// Does nothing.
    public func locationManager(_ manager: LocationManager, didChangeMotion event: MotionEvent) {}
    /// Does nothing.
    public func locationManager(_ manager: LocationManager, willDeliverHeldLocations count: Int) {}
}
