/// An error from the location service: a stable machine-readable ``code`` and a message a person can act on.
public struct LocationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure. The raw values are stable and appear in JSON output.
    public enum Code: String, Sendable, Hashable, Codable, CaseIterable {
        /// The source (gpsd, a file) could not be reached or opened.
        case sourceUnavailable = "source-unavailable"
        /// The source was working and stopped delivering data, or delivered data that made no sense.
        case sourceFailed = "source-failed"
        /// The source delivered data again after a failure.
        case sourceRecovered = "source-recovered"
        /// No fix arrived within the allowed time.
        case noFix = "no-fix"
        /// The receiver had a fix and lost it.
        case fixLost = "fix-lost"
        /// An application lifecycle transition that is not allowed from the current state.
        case invalidTransition = "invalid-transition"
        /// Held locations were dropped because the batch reached its capacity.
        case batchOverflow = "batch-overflow"
        /// The journal could not be read or written.
        case journalIO = "journal-io"
        /// The journal had a damaged or truncated tail; the valid prefix was kept.
        case journalCorrupt = "journal-corrupt"
        /// A request was cancelled before it completed.
        case cancelled = "cancelled"
        /// A configuration value is out of range.
        case invalidConfiguration = "invalid-configuration"
        /// Input data is malformed.
        case invalidData = "invalid-data"
        /// A consumer did not keep up, so fixes waiting for it were dropped; the message says how many.
        case consumerOverrun = "consumer-overrun"
        /// The receiver's clock jumped (a reset, a GPS week-number rollover) and the new timeline was
        /// confirmed by the fixes after it, or a rollover was corrected; the message gives both times.
        case clockJump = "clock-jump"
    }

    /// What went wrong, as a stable code.
    public var code: Code
    /// One line for a person: what failed, where, and why.
    public var message: String

    /// Creates an error with a code and a message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `code: message`.
    public var description: String { "\(code.rawValue): \(message)" }
}
