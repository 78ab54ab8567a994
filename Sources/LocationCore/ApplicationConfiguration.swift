/// Timing rules of the application lifecycle, with iOS-like defaults.
public struct ApplicationConfiguration: Sendable, Hashable {
    /// How long the didEnterBackground handlers (observers and hooks, together) may run, measured on the
    /// injected clock from the first handler call until the last one returns. Handlers that take longer
    /// without a background task having begun get the app purged: it goes to `notRunning` with no
    /// willTerminate (``ApplicationTerminationReason/didEnterBackgroundOverBudget(elapsed:budget:)``).
    /// Default 5 s, the "approximately five seconds" of `applicationDidEnterBackground(_:)`.
    public var didEnterBackgroundBudget: Duration
    /// How long a background task may run in the background. It counts from didEnterBackground, or, for a
    /// task begun while something keeps the app running in the background, from the task's start.
    /// Default 180 s.
    public var backgroundTaskTimeLimit: Duration
    /// How long before ``backgroundTaskTimeLimit`` the open tasks' expiration handlers run. Default 5 s.
    public var expirationWarning: Duration
    /// Whether the app may run in the background at all (like `UIDevice.isMultitaskingSupported`).
    /// Without it, leaving the foreground terminates the app. Default `true`.
    public var isMultitaskingSupported: Bool
    /// Terminate instead of entering the background (like `UIApplicationExitsOnSuspend`): leaving the
    /// foreground sends willResignActive then willTerminate. Default `false`.
    public var exitsOnSuspend: Bool

    /// Creates a configuration; every argument defaults to the documented value.
    public init(
        didEnterBackgroundBudget: Duration = .seconds(5),
        backgroundTaskTimeLimit: Duration = .seconds(180),
        expirationWarning: Duration = .seconds(5),
        isMultitaskingSupported: Bool = true,
        exitsOnSuspend: Bool = false
    ) {
        self.didEnterBackgroundBudget = didEnterBackgroundBudget
        self.backgroundTaskTimeLimit = backgroundTaskTimeLimit
        self.expirationWarning = expirationWarning
        self.isMultitaskingSupported = isMultitaskingSupported
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
