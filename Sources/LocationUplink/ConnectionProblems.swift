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

    /// Notes `problem`; whether to log it. Problems of one `kind` (by default, the same text) are logged once:
    /// a server's 503 whose page names the time is one problem, not one per attempt.
    mutating func note(_ problem: String, kind: String? = nil, at date: Date, now: ContinuousClock.Instant = .now) -> Bool {
        if current == nil { since = date }
        current = problem
        let key = kind ?? problem
        if let lastLogged, lastLogged.text == key, now - lastLogged.at < Self.repeatAfter { return false }
        lastLogged = (key, now)
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
