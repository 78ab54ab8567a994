import LocationCore

/// A delegate that only counts what it is given, and can wait for a number of locations.
package final class CountingDelegate: LocationManagerDelegate {
    private let received = Locked(0)

    package init() {}

    /// Locations received so far.
    package var count: Int { received.value }

    package func locationManager(_ manager: LocationManager, didUpdateLocations locations: [Location]) {
        received.withLock { $0 += locations.count }
    }
}
