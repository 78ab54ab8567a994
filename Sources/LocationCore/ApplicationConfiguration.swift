/// Timing rules of the application lifecycle, with iOS-like defaults.
public struct ApplicationConfiguration: Sendable, Hashable {
    /// How long a background app with no open task and no background location mode keeps running
    /// before it is suspended. Default 5 s.
    public var backgroundGracePeriod: Duration
    /// How long background tasks may run after the app enters the background. Default 180 s.
    public var backgroundTaskTimeLimit: Duration
    /// How long before ``backgroundTaskTimeLimit`` the open tasks' expiration handlers run. Default 5 s.
    public var expirationWarning: Duration
    /// Terminate instead of suspending (like `UIApplicationExitsOnSuspend`). Default `false`.
    public var exitsOnSuspend: Bool

    /// Creates a configuration; every argument defaults to the documented value.
    public init(
        backgroundGracePeriod: Duration = .seconds(5),
        backgroundTaskTimeLimit: Duration = .seconds(180),
        expirationWarning: Duration = .seconds(5),
        exitsOnSuspend: Bool = false
    ) {
        self.backgroundGracePeriod = backgroundGracePeriod
        self.backgroundTaskTimeLimit = backgroundTaskTimeLimit
        self.expirationWarning = expirationWarning
        self.exitsOnSuspend = exitsOnSuspend
    }
}

/// Identifies a background task begun with ``Application/beginBackgroundTask(name:expirationHandler:)``.
public struct BackgroundTaskIdentifier: Sendable, Hashable, RawRepresentable {
    /// The identifier's number.
    public var rawValue: Int
    /// Creates an identifier from its number.
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// Returned when a task cannot begin (the app is suspended or not running).
    public static let invalid = BackgroundTaskIdentifier(rawValue: 0)
}
