/// Why an application stopped running: ``Application/terminationReason``.
///
/// Only some ways of ending send willTerminate (``sentWillTerminate``); a purged or killed app gets no
/// message at all, so this is how whoever hosts it (the daemon) learns what happened and can say so.
public enum ApplicationTerminationReason: Sendable, Hashable, CustomStringConvertible {
    /// ``Application/terminate()`` ended an app that was running (not suspended). It got willTerminate.
    case terminated
    /// The app left the foreground but may not run in the background (multitasking is not supported, or
    /// it exits on suspend). It got willResignActive (if it was active), then willTerminate.
    case exitedOnLeavingForeground
    /// ``Application/terminate()`` ended a suspended app: it was killed without a message.
    case killedWhileSuspended
    /// The didEnterBackground handlers ran `elapsed`, over `budget`, without beginning a background
    /// task: the app was purged without a message.
    case didEnterBackgroundOverBudget(elapsed: Duration, budget: Duration)
    /// These background tasks (unnamed ones as `"unnamed"`) were still open at their time limit, after
    /// their expiration handlers had run: the app was purged without a message.
    case backgroundTaskExpired(tasks: [String])

    /// Whether observers got willTerminate before the app stopped.
    public var sentWillTerminate: Bool {
        switch self {
        case .terminated, .exitedOnLeavingForeground: true
        case .killedWhileSuspended, .didEnterBackgroundOverBudget, .backgroundTaskExpired: false
        }
    }

    /// One line for a log or a status reply, e.g. "purged: didEnterBackground ran 6.0 s, over its 5.0 s budget".
    public var description: String {
        switch self {
        case .terminated:
            "terminated"
        case .exitedOnLeavingForeground:
            "terminated on leaving the foreground: it does not run in the background"
        case .killedWhileSuspended:
            "killed while suspended"
        case .didEnterBackgroundOverBudget(let elapsed, let budget):
            "purged: didEnterBackground ran \(Self.format(elapsed)), over its \(Self.format(budget)) budget, without a background task"
        case .backgroundTaskExpired(let tasks):
            "purged: background task\(tasks.count == 1 ? "" : "s") \(tasks.joined(separator: ", ")) still open at the time limit"
        }
    }

    private static func format(_ duration: Duration) -> String {
        let tenths = (duration.seconds * 10).rounded()
        return "\(tenths / 10) s"
    }
}
