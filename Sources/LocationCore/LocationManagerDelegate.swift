/// Receives a ``LocationManager``'s locations and news. Every method but the first has an empty default.
///
/// Calls arrive one at a time and in order. They may come from any thread; a delegate must be `Sendable`.
public protocol LocationManagerDelegate: AnyObject, Sendable {
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
    /// The next `didUpdateLocations` call carries `count` held fixes, flushed because the app returned to
    /// the foreground, rather than a live fix.
    func locationManager(_ manager: LocationManager, willDeliverHeldLocations count: Int)
}

extension LocationManagerDelegate {
    public func locationManager(_ manager: LocationManager, didFailWithError error: LocationError) {}
    public func locationManager(_ manager: LocationManager, didChangeAccuracyPolicy policy: AccuracyPolicy) {}
    public func locationManager(_ manager: LocationManager, didChangeSourceStatus status: LocationSourceStatus) {}
    public func locationManager(_ manager: LocationManager, didUpdateSatellitesInView count: Int) {}
    public func locationManager(_ manager: LocationManager, didDropHeldLocations count: Int) {}
    public func locationManager(_ manager: LocationManager, willDeliverHeldLocations count: Int) {}
}
