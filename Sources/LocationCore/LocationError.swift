/// An error from the location service: a stable machine-readable ``code`` and a message a person can act on.
public struct LocationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure: a stable code whose raw value appears in JSON output.
    ///
    /// Extensible, as server libraries' error codes are: a code another version or another program wrote
    /// (a daemon's reply) is kept as it is rather than refused, and compares equal to the known code of
    /// the same spelling.
    public struct Code: ErrorCode, CaseIterable {
        /// The code as it appears in JSON, for example `no-fix`.
        public var rawValue: String

        /// Creates a code from its JSON spelling.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// Whether this version of the library defines the code.
        public var isKnown: Bool { Self.allCases.contains(self) }

        /// The source (gpsd, a file) could not be reached or opened.
        public static let sourceUnavailable: Code = "source-unavailable"
        /// The source was working and stopped delivering data, or delivered data that made no sense.
        public static let sourceFailed: Code = "source-failed"
        /// The source delivered data again after a failure.
        public static let sourceRecovered: Code = "source-recovered"
        /// No fix arrived within the allowed time.
        public static let noFix: Code = "no-fix"
        /// Fixes came, but none as accurate as required within the allowed time (the message names the best).
        public static let accuracyNotMet: Code = "accuracy-not-met"
        /// The receiver had a fix and lost it.
        public static let fixLost: Code = "fix-lost"
        /// An application lifecycle transition that is not allowed from the current state.
        public static let invalidTransition: Code = "invalid-transition"
        /// Held locations were dropped because the batch reached its capacity.
        public static let batchOverflow: Code = "batch-overflow"
        /// The journal could not be read or written.
        public static let journalIO: Code = "journal-io"
        /// The journal had a damaged or truncated tail; the valid prefix was kept.
        public static let journalCorrupt: Code = "journal-corrupt"
        /// A request was cancelled before it completed.
        public static let cancelled: Code = "cancelled"
        /// A configuration value is out of range.
        public static let invalidConfiguration: Code = "invalid-configuration"
        /// Input data is malformed.
        public static let invalidData: Code = "invalid-data"
        /// A consumer did not keep up, so fixes waiting for it were dropped; the message says how many.
        public static let consumerOverrun: Code = "consumer-overrun"
        /// The receiver's clock jumped (a reset, a GPS week-number rollover) and the new timeline was
        /// confirmed by the fixes after it, or a rollover was corrected; the message gives both times.
        public static let clockJump: Code = "clock-jump"

        /// A fix implied an impossible movement and was rejected (see ``OutlierGate``); the message says how far and how fast.
        public static let outlierRejected: Code = "outlier-rejected"

        /// The app was stopped without willTerminate: purged, or killed while suspended.
        public static let applicationStopped: Code = "app-stopped"

        /// Every code this version of the library defines.
        public static let allCases: [Code] = [
            .applicationStopped,
            .sourceUnavailable, .sourceFailed, .sourceRecovered, .noFix, .fixLost, .invalidTransition, .batchOverflow, .journalIO, .journalCorrupt, .cancelled, .invalidConfiguration, .invalidData, .consumerOverrun, .clockJump, .accuracyNotMet, .outlierRejected,
        ]
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
