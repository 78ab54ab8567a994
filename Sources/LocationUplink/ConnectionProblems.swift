import Foundation

/// What an uplink says of its connection: the problem `status` shows while it lasts, and which problems and
/// reconnections go to the log: each kind of problem once (again only after 10 minutes), and a connection
/// only when a problem before it was logged. A broker that accepts and drops every connection writes a few
/// lines, not two per attempt.
struct ConnectionProblems: Sendable {
    /// The problem now, and since when it (or the problems right before it) lasted.
    private(set) var current: String?
    private(set) var since: Date?
    private var lastLogged: (text: String, at: ContinuousClock.Instant)?
    /// Whether the next connection is logged: the first is, and one after a logged problem.
    private var logNextConnection = true

    static let repeatAfter: Duration = .seconds(600)

    /// Notes `problem`; whether to log it.
    mutating func note(_ problem: String, at date: Date, now: ContinuousClock.Instant = .now) -> Bool {
        if current == nil { since = date }
        current = problem
        if let lastLogged, lastLogged.text == problem, now - lastLogged.at < Self.repeatAfter { return false }
        lastLogged = (problem, now)
        logNextConnection = true
        return true
    }

    /// Notes a connection; whether to log it, and the problem it ends.
    mutating func connected() -> (log: Bool, after: String?) {
        defer {
            current = nil
            since = nil
            logNextConnection = false
        }
        return (logNextConnection, current)
    }
}
