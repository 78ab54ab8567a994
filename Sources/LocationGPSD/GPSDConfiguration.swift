import LocationCore

/// Where gpsd is and how the source treats it: reconnection, the no-data watchdog, epoch merging.
public struct GPSDConfiguration: Sendable, Hashable {
    /// The host gpsd listens on.
    public var host: String
    /// The TCP port gpsd listens on (gpsd's default is 2947).
    public var port: Int
    /// Watch only this device (such as `/dev/ttyACM0`); `nil` watches every device gpsd has.
    public var devicePath: String?
    /// The first delay before reconnecting after gpsd went away; it doubles on every failed attempt.
    public var reconnectDelay: Duration
    /// The longest delay between reconnection attempts.
    public var maximumReconnectDelay: Duration
    /// A connection that delivers no message at all for this long is treated as stalled and reopened.
    public var watchdogTimeout: Duration
    /// How long a receiver epoch is held for more TPVs of the same time when nothing else arrives.
    ///
    /// An epoch is delivered at once when the next epoch begins; this only bounds the wait after the
    /// last epoch of a burst. It should exceed the gap between two TPVs of one epoch and stay below the
    /// receiver's update interval.
    public var epochSettle: Duration
    /// The most reports (fixes, status changes, errors) that wait for a consumer that is busy, such as a
    /// delegate that blocks. The reader keeps draining gpsd meanwhile; beyond this the oldest waiting fixes
    /// are dropped and reported as one `LocationError.Code.consumerOverrun` error. Default 1,000
    /// (100 s of a 10 Hz receiver, about 300 KB).
    public var maximumPendingReports: Int

    /// Creates a configuration; the defaults suit a local gpsd with a 1–10 Hz receiver.
    public init(
        host: String = "localhost",
        port: Int = 2947,
        devicePath: String? = nil,
        reconnectDelay: Duration = .milliseconds(250),
        maximumReconnectDelay: Duration = .seconds(5),
        watchdogTimeout: Duration = .seconds(5),
        epochSettle: Duration = .milliseconds(500),
        maximumPendingReports: Int = 1_000
    ) {
        self.host = host
        self.port = port
        self.devicePath = devicePath
        self.reconnectDelay = reconnectDelay
        self.maximumReconnectDelay = maximumReconnectDelay
        self.watchdogTimeout = watchdogTimeout
        self.epochSettle = epochSettle
        self.maximumPendingReports = maximumPendingReports
    }

    /// `host:port`, as used in names and messages.
    public var endpoint: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Checks the values; throws `.invalidConfiguration` naming the bad one.
    public func validate() throws(LocationError) {
        func bad(_ message: String) -> LocationError { LocationError(.invalidConfiguration, message) }
        if host.isEmpty { throw bad("gpsd host is empty") }
        if !(1...65_535).contains(port) { throw bad("gpsd port \(port) is outside 1...65535") }
        if let devicePath, devicePath.isEmpty { throw bad("gpsd device path is empty (use nil for all devices)") }
        if reconnectDelay <= .zero { throw bad("reconnectDelay must be positive, got \(reconnectDelay)") }
        if maximumReconnectDelay < reconnectDelay {
            throw bad("maximumReconnectDelay \(maximumReconnectDelay) is below reconnectDelay \(reconnectDelay)")
        }
        if watchdogTimeout <= .zero { throw bad("watchdogTimeout must be positive, got \(watchdogTimeout)") }
        if epochSettle <= .zero { throw bad("epochSettle must be positive, got \(epochSettle)") }
        if maximumPendingReports < 1 {
            throw bad("maximumPendingReports must be at least 1, got \(maximumPendingReports)")
        }
    }
}
