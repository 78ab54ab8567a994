import LocationCore

/// One event as it travels from `locationd` to its clients: a `LocationEvent`, the vocabulary of every
/// `LocationManager`, and for a held batch from `locationd` the id its consumer acknowledges it with
/// (``ControlRequest/acknowledge(batch:)``) once it has the fixes.
///
/// ``JSONLineEncoder`` writes a frame as one JSON line and ``LocationEventDecoder`` reads it back.
public struct EventFrame: Sendable, Hashable {
    /// What happened.
    public var event: LocationEvent
    /// For a held batch from `locationd`: the id to acknowledge it with; `nil` otherwise.
    public var batchID: String?

    /// An event, with the acknowledgement id of a held batch from `locationd`.
    public init(_ event: LocationEvent, batchID: String? = nil) {
        self.event = event
        self.batchID = batchID
    }
}

extension ApplicationEvent {
    /// An event that leaves an app in `state`, for where only the state is known (a state line of an
    /// earlier version): `inactive` is reached three ways, and is taken as `willResignActive`.
    package static func leading(to state: ApplicationState) -> ApplicationEvent {
        switch state {
        case .notRunning: .willTerminate
        case .inactive: .willResignActive
        case .active: .didBecomeActive
        case .background: .didEnterBackground
        case .suspended: .didSuspend
        }
    }
}
