import Foundation
import LocationCore

/// Whether a daemon's source is down, since when and why, from the source statuses and errors a
/// ``LocationManager``'s delegate hears, in the order it hears them.
///
/// A source goes down when its status becomes ``LocationSourceStatus/unavailable`` (gpsd unreachable,
/// a replay file that failed); the reason is its latest `source-unavailable` or `source-failed` error,
/// whether that came just before the status (a source that failed for good) or just after it (gpsd,
/// which says unavailable first, then why). Retries and rests (`connecting`, `resting`) do not end an
/// outage; data from the receiver (`no-fix`, `has-fix`), the end of a replay, or a stopped source do.
package struct SourceOutageTracker: Sendable, Equatable {
    /// One outage.
    package struct Outage: Sendable, Equatable {
        /// When the source went down (the daemon's wall clock).
        package var since: Date
        /// The source's own reason, once it gave one.
        package var reason: LocationError?

        /// An outage that began at `since` for `reason`.
        package init(since: Date, reason: LocationError?) {
            self.since = since
            self.reason = reason
        }

        /// One line for a person: the source, since when, and why.
        package func message(source: String) -> String {
            let why = reason?.message ?? "no reason given yet"
            return "\(source) is unavailable since \(RFC3339.string(from: since, fractionDigits: 3)): \(why)"
        }
    }

    /// The outage in progress, if the source is down.
    package private(set) var outage: Outage?
    private var lastError: LocationError?

    /// A tracker that has seen nothing (the source is not down).
    package init() {}

    /// The source's status changed at `date`.
    package mutating func status(_ status: LocationSourceStatus, at date: Date) {
        switch status {
        case .unavailable:
            if outage == nil { outage = Outage(since: date, reason: lastError) }
        case .connecting, .resting:
            break
        case .noFix, .hasFix, .ended, .idle:
            outage = nil
            lastError = nil
        }
    }

    /// The source reported an error; only `source-unavailable` and `source-failed` say why it is down.
    package mutating func error(_ error: LocationError) {
        guard error.code == .sourceUnavailable || error.code == .sourceFailed else { return }
        lastError = error
        if outage != nil { outage?.reason = error }
    }
}
