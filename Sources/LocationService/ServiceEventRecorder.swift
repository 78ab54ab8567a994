import LocationCore

/// Turns a manager's delegate calls and an application's lifecycle into ``ServiceEvent``s, in order.
///
/// Create it before the ``LocationManager`` on the same application: its lifecycle hook then runs
/// before the manager's, so a state change is reported before the batch the change flushes.
public final class ServiceEventRecorder: LocationManagerDelegate {
    private let emit: @Sendable (ServiceEvent) -> Void
    private let statusChanged: @Sendable (LocationSourceStatus) -> Void
    private let errors = Locked<(last: LocationError?, sourceFailure: LocationError?)>((nil, nil))
    /// Whether a "waiting for a fix" event was emitted and no fix has come since; the satellites in view.
    private let waiting = Locked<(isWaiting: Bool, satellites: Int?)>((false, nil))

    /// Starts recording the application's lifecycle; set the recorder as the manager's delegate too.
    public init(
        application: Application,
        statusChanged: @escaping @Sendable (LocationSourceStatus) -> Void = { _ in },
        emit: @escaping @Sendable (ServiceEvent) -> Void
    ) {
        self.emit = emit
        self.statusChanged = statusChanged
        _ = application.addHook { event in emit(.state(Self.state(after: event))) }
    }

    /// The state an application is in right after (or, for "will" messages, during) an event.
    public static func state(after event: ApplicationEvent) -> ApplicationState {
        switch event {
        case .didFinishLaunching, .willResignActive, .willEnterForeground: .inactive
        case .didBecomeActive: .active
        case .didEnterBackground: .background
        case .didSuspend: .suspended
        case .willTerminate: .notRunning
        }
    }

    public func locationManager(_ manager: LocationManager, didUpdateLocations locations: [Location]) {
        for location in locations { emit(.location(location)) }
    }

    public func locationManager(_ manager: LocationManager, willDeliverHeldLocations count: Int) {
        emit(.batch(count: count, reason: "foreground"))
    }

    /// The error that made the source stop for good, if it did.
    public var sourceFailure: LocationError? { errors.value.sourceFailure }

    public func locationManager(_ manager: LocationManager, didFailWithError error: LocationError) {
        errors.withLock { $0.last = error }
        emit(.error(error))
    }

    public func locationManager(_ manager: LocationManager, didDropHeldLocations count: Int) {
        emit(.error(LocationError(.batchOverflow, "dropped the \(count) oldest held fixes: the batch was full")))
    }

    public func locationManager(_ manager: LocationManager, didChangeSourceStatus status: LocationSourceStatus) {
        // The manager reports a source's fatal error just before the source becomes unavailable.
        if status == .unavailable { errors.withLock { $0.sourceFailure = $0.sourceFailure ?? $0.last } }
        let event = waiting.withLock { waiting -> ServiceEvent? in
            switch status {
            case .noFix:
                waiting.isWaiting = true
                return .source(.noFix, satellitesVisible: waiting.satellites)
            case .hasFix:
                defer { waiting = (false, nil) }
                return waiting.isWaiting ? .source(.hasFix, satellitesVisible: nil) : nil
            default:
                waiting = (false, nil)
                return nil
            }
        }
        if let event { emit(event) }
        statusChanged(status)
    }

    public func locationManager(_ manager: LocationManager, didUpdateSatellitesInView count: Int) {
        let event = waiting.withLock { waiting -> ServiceEvent? in
            guard waiting.satellites != count else { return nil }
            waiting.satellites = count
            return waiting.isWaiting ? .source(.noFix, satellitesVisible: count) : nil
        }
        if let event { emit(event) }
    }
}
