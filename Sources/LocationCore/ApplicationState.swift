/// Where an application is in its lifecycle, as on iOS.
public enum ApplicationState: String, Sendable, Hashable, Codable, CaseIterable {
    /// Not launched, or terminated.
    case notRunning
    /// In the foreground but not receiving events (launching, or between active and background).
    case inactive
    /// In the foreground and in use.
    case active
    /// Running in the background: location updates use the reduced policy.
    case background
    /// In the background and not running code: location fixes are held in a batch.
    case suspended

    /// Whether the state is `inactive` or `active`.
    public var isForeground: Bool { self == .inactive || self == .active }
}

/// A lifecycle message, delivered to observers and on ``Application/events``.
public enum ApplicationEvent: String, Sendable, Hashable, Codable, CaseIterable {
    /// The application finished launching (now `inactive`).
    case didFinishLaunching
    /// The application is about to leave `active`.
    case willResignActive
    /// The application entered the background.
    case didEnterBackground
    /// The application was suspended. iOS apps cannot observe this; here the daemon reports it.
    case didSuspend
    /// The application is about to return to the foreground (from background or suspended).
    case willEnterForeground
    /// The application became active.
    case didBecomeActive
    /// The application is about to terminate.
    case willTerminate
}

extension ApplicationEvent {
    /// The state an application is in right after (or, for "will" messages, during) this message.
    public var resultingState: ApplicationState {
        switch self {
        case .didFinishLaunching, .willResignActive, .willEnterForeground: .inactive
        case .didBecomeActive: .active
        case .didEnterBackground: .background
        case .didSuspend: .suspended
        case .willTerminate: .notRunning
        }
    }
}
