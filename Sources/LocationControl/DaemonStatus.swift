import Foundation
import LocationCore

/// What `locationd` reports for `status`: lifecycle, policy, source, last fix, batch and journal.
public struct DaemonStatus: Codable, Sendable, Hashable {
    /// The lifecycle state.
    public var state: ApplicationState
    /// Whether the app runs in the background.
    public var executingInBackground: Bool
    /// The accuracy policy in effect.
    public var policy: AccuracyPolicy
    /// The source's name, such as `gpsd localhost:2947` or `replay demo.gpx`.
    public var source: String
    /// The source's connection and fix state.
    public var sourceStatus: LocationSourceStatus
    /// The source's last error (gpsd unreachable, a replay file damaged further on), if any since start.
    public var sourceProblem: String?
    /// While the source is down (``sourceStatus`` `unavailable`): since when, as an RFC 3339 UTC time.
    public var sourceDownSince: String?
    /// While the source is down: its own reason (its last `source-unavailable` or `source-failed` error).
    public var sourceDownReason: String?
    /// The last fix, if any.
    public var lastFix: Location?
    /// Seconds since the last fix arrived at the daemon, if any.
    public var lastFixAge: Double?
    /// Fixes held for the next foreground.
    public var held: Int
    /// Held fixes not in the journal, because its appends fail (a full disk); they are held in memory and
    /// written once the journal can be written again. 0 when the journal is whole.
    public var unjournaled: Int
    /// Held fixes dropped for lack of room since the daemon started.
    public var dropped: Int
    /// The journal file, if any.
    public var journal: String?
    /// What was last wrong with the journal: a damaged tail cut off at start (and how much of it was
    /// dropped), or writing that failed (and why), if anything.
    public var journalProblem: String?
    /// Clients watching the event stream.
    public var watchers: Int
    /// Seconds since the daemon started.
    public var uptime: Double
    /// The control socket the report came through. The daemon leaves it out; `locationctl status` fills in
    /// the socket it used, since it may have tried more than one.
    public var socket: String?
    /// The app the report is about (the caller's, or each one's in an `apps` reply).
    public var app: String?
    /// The user id the app's session belongs to; absent for `default`, which every client may use.
    public var owner: UInt32?
    /// Whether a connection that is the app itself (opened with `attach`) is connected.
    public var attached: Bool?
    /// Since when (RFC 3339 UTC) the app has been gone: its own connection dropped while it tracked, and its
    /// session holds its fixes for it.
    public var abandonedSince: String?
    /// Until when (RFC 3339 UTC) an abandoned session is kept before it and what it holds are dropped.
    public var keptUntil: String?
    /// The most fixes the session holds; beyond it the oldest are dropped and counted in ``dropped``.
    public var holdLimit: Int?
    /// Fixes flushed in a batch that no consumer has acknowledged yet: they are sent to the app's next
    /// watcher, and leave the daemon only when a consumer acknowledges them.
    public var unacknowledged: Int?
    /// How the one receiver runs for all apps: `continuous`, `duty-cycled every N s`, or `off`.
    public var receiver: String?
    /// How many app sessions the daemon has.
    public var apps: Int?
    /// The app's seconds between background acquisitions.
    public var reducedInterval: Double?
    /// The app's accuracy (metres) that ends a background acquisition; absent: the first fix.
    public var reducedAccuracy: Double?
    /// The app's background location mode.
    public var backgroundLocation: Bool?
    /// Whether the app wants location updates.
    public var updating: Bool?
    /// How many messages the receiver's gpsd source has read since the daemon started (absent for a replay):
    /// it stands still while the receiver is off.
    public var receiverMessages: Int?
    /// locationd's uplinks and how far each has got (`nil` from a daemon without uplinks).
    public var uplinks: [UplinkStatus]?
    /// locationd's NMEA socket and what its readers got (`nil` from a daemon without one).
    public var nmeaSocket: NMEASocketStatus?
    /// Whether the app's receiver stands still, as its motion detector says (`nil` without `--motion`).
    public var motion: MotionState?
    /// Fixes the outlier gate rejected for the app since the daemon started (`nil` without `--max-speed`).
    public var outliersRejected: Int?

    /// Creates a status report.
    public init(
        state: ApplicationState, executingInBackground: Bool, policy: AccuracyPolicy, source: String,
        sourceStatus: LocationSourceStatus, lastFix: Location?, lastFixAge: Double?, held: Int, unjournaled: Int = 0,
        dropped: Int, journal: String?, watchers: Int, uptime: Double, journalProblem: String? = nil,
        sourceProblem: String? = nil, sourceDownSince: String? = nil, sourceDownReason: String? = nil
    ) {
        self.sourceProblem = sourceProblem
        self.sourceDownSince = sourceDownSince
        self.sourceDownReason = sourceDownReason
        self.state = state
        self.executingInBackground = executingInBackground
        self.policy = policy
        self.source = source
        self.sourceStatus = sourceStatus
        self.lastFix = lastFix
        self.lastFixAge = lastFixAge
        self.held = held
        self.unjournaled = unjournaled
        self.dropped = dropped
        self.journal = journal
        self.journalProblem = journalProblem
        self.watchers = watchers
        self.uptime = uptime
    }
}
