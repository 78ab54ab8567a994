import Foundation

/// One uplink of locationd as `status` shows it: where it sends, and how far its outbox has got.
public struct UplinkStatus: Codable, Sendable, Hashable {
    /// The uplink's name, made of its URL (`owntracks-USER-DEVICE@HOST-PORT`): its outbox files carry it.
    public var name: String
    /// The URL as configured (it never holds a password).
    public var url: String
    /// Whether the connection to the receiver is up now.
    public var connected: Bool
    /// Fixes in the outbox not yet acknowledged, in flight included.
    public var queued: Int
    /// Fixes sent and waiting for their acknowledgement.
    public var inFlight: Int
    /// Fixes the receiver acknowledged since locationd started.
    public var acknowledged: Int
    /// Fixes dropped because the outbox was full (its oldest), since locationd started.
    public var droppedFull: Int
    /// The last problem (a refused or lost connection, a failed publish), while it lasts.
    public var lastError: String?
    /// Since when the problem has lasted (RFC 3339).
    public var lastErrorSince: String?
    /// When the receiver last acknowledged a fix (RFC 3339).
    public var lastAcknowledged: String?
    /// The outbox journal; `nil` when it is kept in memory only (locationd without `--journal`).
    public var outbox: String?
    /// Why the outbox cannot be written now (a full disk), while it lasts: fixes are kept in memory meanwhile.
    public var outboxProblem: String?
    /// Fixes an HTTP server refused for good (a 4xx other than those that mean its configuration), dropped,
    /// since locationd started; `nil` for an MQTT uplink.
    public var droppedRefused: Int?
    /// Fixes dropped for age (more than the uplink's `max-age` older than the newest), oldest first, since
    /// locationd started (and when it loaded the outbox); `nil` without `max-age`.
    public var droppedOld: Int?
    /// When the next attempt is due after a failed one (RFC 3339), while the uplink waits to try again.
    public var nextAttempt: String?
    /// The region transitions the uplink sends (OwnTracks `transition`), since locationd started; `nil` for
    /// an uplink that sends none.
    public var events: Events?
    /// The Home Assistant zone the tracker's state topic says now (the region last entered and not left);
    /// `nil` for another uplink, or none.
    public var zone: String?

    /// The counts of an uplink's region transitions.
    public struct Events: Codable, Sendable, Hashable {
        /// Waiting for the receiver's acknowledgement, in flight included.
        public var queued: Int
        /// Acknowledged by the receiver.
        public var acknowledged: Int
        /// Refused by the receiver for good (an HTTP 4xx), dropped.
        public var refused: Int
        /// Dropped because the events' outbox was full (its oldest).
        public var dropped: Int

        /// Counts.
        public init(queued: Int, acknowledged: Int, refused: Int, dropped: Int) {
            self.queued = queued
            self.acknowledged = acknowledged
            self.refused = refused
            self.dropped = dropped
        }

        package init(_ counts: (queued: Int, acknowledged: Int, refused: Int, dropped: Int)) {
            self.init(queued: counts.queued, acknowledged: counts.acknowledged, refused: counts.refused, dropped: counts.dropped)
        }
    }

    /// Creates a status.
    public init(
        name: String, url: String, connected: Bool, queued: Int, inFlight: Int, acknowledged: Int, droppedFull: Int,
        lastError: String?, lastErrorSince: String?, lastAcknowledged: String?, outbox: String?,
        outboxProblem: String? = nil
    ) {
        self.name = name
        self.url = url
        self.connected = connected
        self.queued = queued
        self.inFlight = inFlight
        self.acknowledged = acknowledged
        self.droppedFull = droppedFull
        self.lastError = lastError
        self.lastErrorSince = lastErrorSince
        self.lastAcknowledged = lastAcknowledged
        self.outbox = outbox
        self.outboxProblem = outboxProblem
    }
}
