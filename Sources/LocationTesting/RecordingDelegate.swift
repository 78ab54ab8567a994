import LocationCore

/// A delegate that records every call, for assertions.
public final class RecordingDelegate: LocationManagerDelegate {
    /// One recorded delegate call.
    public enum Call: Sendable, Hashable {
        /// `didUpdateLocations`.
        case locations([Location])
        /// `didFailWithError`.
        case error(LocationError)
        /// `didChangeAccuracyPolicy`.
        case policy(AccuracyPolicy)
        /// `didChangeSourceStatus`.
        case status(LocationSourceStatus)
        /// `didDropHeldLocations`.
        case dropped(Int)
        /// `didUpdateSatellitesInView`.
        case satellitesInView(Int)
    }

    private let recorded = Locked<[Call]>([])
    private let recordedEvents = Locked<[LocationEvent]>([])

    /// Creates an empty recorder.
    public init() {}

    /// Every call in order.
    public var calls: [Call] { recorded.value }

    /// The `didUpdateLocations` arguments in order.
    public var deliveries: [[Location]] {
        calls.compactMap { if case .locations(let value) = $0 { value } else { nil } }
    }

    /// Every delivered location, flattened.
    public var locations: [Location] { deliveries.flatMap { $0 } }

    /// The errors in order.
    public var errors: [LocationError] {
        calls.compactMap { if case .error(let value) = $0 { value } else { nil } }
    }

    /// The policy changes in order.
    public var policies: [AccuracyPolicy] {
        calls.compactMap { if case .policy(let value) = $0 { value } else { nil } }
    }

    /// The drop reports in order.
    public var dropReports: [Int] {
        calls.compactMap { if case .dropped(let value) = $0 { value } else { nil } }
    }

    /// Every event the manager's stream carried, in order, as `didReceive` got it.
    public var events: [LocationEvent] { recordedEvents.value }

    /// Forgets everything recorded so far.
    public func reset() {
        recorded.withLock { $0.removeAll() }
        recordedEvents.withLock { $0.removeAll() }
    }

    /// Records the event, then calls the specific method as the default implementation does.
    public func locationManager(_ manager: LocationManager, didReceive event: LocationEvent) {
        recordedEvents.withLock { $0.append(event) }
        callSpecificMethod(for: event, from: manager)
    }

    public func locationManager(_ manager: LocationManager, didUpdateLocations locations: [Location]) {
        recorded.withLock { $0.append(.locations(locations)) }
    }

    public func locationManager(_ manager: LocationManager, didFailWithError error: LocationError) {
        recorded.withLock { $0.append(.error(error)) }
    }

    public func locationManager(_ manager: LocationManager, didChangeAccuracyPolicy policy: AccuracyPolicy) {
        recorded.withLock { $0.append(.policy(policy)) }
    }

    public func locationManager(_ manager: LocationManager, didChangeSourceStatus status: LocationSourceStatus) {
        recorded.withLock { $0.append(.status(status)) }
    }

    public func locationManager(_ manager: LocationManager, didDropHeldLocations count: Int) {
        recorded.withLock { $0.append(.dropped(count)) }
    }

    public func locationManager(_ manager: LocationManager, didUpdateSatellitesInView count: Int) {
        recorded.withLock { $0.append(.satellitesInView(count)) }
    }
}

/// An application observer that records every message, for assertions.
public final class RecordingObserver: ApplicationObserver {
    private let recorded = Locked<[ApplicationEvent]>([])

    /// Creates an empty recorder.
    public init() {}

    /// Every message in order.
    public var events: [ApplicationEvent] { recorded.value }

    public func applicationDidFinishLaunching(_ application: Application) { record(.didFinishLaunching) }
    public func applicationWillResignActive(_ application: Application) { record(.willResignActive) }
    public func applicationDidEnterBackground(_ application: Application) { record(.didEnterBackground) }
    public func applicationDidSuspend(_ application: Application) { record(.didSuspend) }
    public func applicationWillEnterForeground(_ application: Application) { record(.willEnterForeground) }
    public func applicationDidBecomeActive(_ application: Application) { record(.didBecomeActive) }
    public func applicationWillTerminate(_ application: Application) { record(.willTerminate) }

    private func record(_ event: ApplicationEvent) { recorded.withLock { $0.append(event) } }
}
