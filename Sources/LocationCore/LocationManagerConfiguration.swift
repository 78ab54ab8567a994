/// Everything a ``LocationManager`` is set up with, with documented defaults.
public struct LocationManagerConfiguration: Sendable, Hashable {
    /// The accuracy ``LocationManager/requestLocation(timeout:)`` waits for, in metres; `nil` takes the
    /// first fix. Default `nil`.
    public var desiredAccuracy: Double?
    /// Minimum distance in metres between delivered fixes under the high policy; `nil` delivers every
    /// epoch. Default `nil`.
    public var distanceFilter: Double?
    /// The background location mode: whether a background app keeps getting live (reduced) updates, even
    /// when suspended, and is kept running while it updates. Without it the app's fixes are held from
    /// `didEnterBackground` until it returns to the foreground. Default `false`, as on iOS (an app
    /// declares the mode to get it); `locationd` and `locationctl` default the same way.
    public var allowsBackgroundLocationUpdates: Bool
    /// The background policy.
    public var reduced: ReducedAccuracyPolicy
    /// The most fixes held while suspended; older ones are dropped and counted. Default 100,000.
    public var batchCapacity: Int
    /// Where held fixes are journaled so that a crash loses none; `nil` keeps them only in memory.
    /// Default `nil`.
    public var journalPath: String?
    /// The longest a journaled fix waits for `fsync`. Default 1 s.
    public var journalSyncInterval: Duration
    /// The most elements each consumer of ``LocationManager/events`` or ``LocationManager/updates`` may
    /// fall behind. A consumer that
    /// falls further behind loses the oldest, which are counted in
    /// ``LocationManager/missedUpdateCount`` and logged. Default 1,000.
    public var updatesBufferLimit: Int
    /// How long ``LocationManager/requestLocation()`` waits for a fix that meets ``desiredAccuracy``
    /// before it delivers the best seen (or an error). Default 30 s.
    public var requestTimeout: Duration
    /// Rejects fixes that imply an impossible movement (never delivered, never a region's change; each
    /// reported as an ``LocationError/Code/outlierRejected`` error event); `nil` lets every fix through.
    /// Default `nil`.
    public var outlierGate: OutlierGate?
    /// Tells standing still from moving (``LocationEvent/motion(_:)`` events); `nil` for no detection.
    /// Default `nil`.
    public var motion: MotionDetector.Configuration?
    /// What is delivered while the receiver stands still (with ``motion`` set). Default
    /// ``StationaryDelivery/centroid``.
    public var whileStationary: StationaryDelivery
    /// While the receiver stands still (with ``motion`` set), let it rest: one acquisition every
    /// ``stationaryCheckInterval`` instead of every epoch, and back to the policy's own mode at the first
    /// check fix that has clearly moved. Default `false`.
    public var pausesWhenStationary: Bool
    /// Time between the checks while paused (with ``pausesWhenStationary``). Default 30 s.
    public var stationaryCheckInterval: Duration
    /// Deferred delivery: live fixes are kept (and journaled) and delivered together, as one
    /// `.held(.deferred)` event, no later than this after the oldest of them arrived (or at
    /// ``LocationManager/flush()``); `nil` delivers each fix as it comes. Default `nil`.
    public var maximumUpdateDelay: Duration?

    /// Creates a configuration; every argument defaults to the documented value.
    public init(
        desiredAccuracy: Double? = nil,
        distanceFilter: Double? = nil,
        allowsBackgroundLocationUpdates: Bool = false,
        reduced: ReducedAccuracyPolicy = .init(),
        batchCapacity: Int = 100_000,
        journalPath: String? = nil,
        journalSyncInterval: Duration = .seconds(1),
        updatesBufferLimit: Int = 1_000,
        requestTimeout: Duration = .seconds(30),
        outlierGate: OutlierGate? = nil,
        motion: MotionDetector.Configuration? = nil,
        whileStationary: StationaryDelivery = .centroid,
        pausesWhenStationary: Bool = false,
        stationaryCheckInterval: Duration = .seconds(30),
        maximumUpdateDelay: Duration? = nil
    ) {
        self.pausesWhenStationary = pausesWhenStationary
        self.stationaryCheckInterval = stationaryCheckInterval
        self.outlierGate = outlierGate
        self.motion = motion
        self.whileStationary = whileStationary
        self.maximumUpdateDelay = maximumUpdateDelay
        self.desiredAccuracy = desiredAccuracy
        self.distanceFilter = distanceFilter
        self.allowsBackgroundLocationUpdates = allowsBackgroundLocationUpdates
        self.reduced = reduced
        self.batchCapacity = batchCapacity
        self.journalPath = journalPath
        self.journalSyncInterval = journalSyncInterval
        self.updatesBufferLimit = updatesBufferLimit
        self.requestTimeout = requestTimeout
    }
}

/// What a ``LocationManager`` delivers while its ``MotionDetector`` says the receiver stands still.
public enum StationaryDelivery: String, Sendable, Hashable, CaseIterable {
    /// Each fix, at the position where the receiver stopped (no jitter in a log), with a speed of 0 and no
    /// course; its time, accuracy and the rest are the fix's own.
    case centroid
    /// Nothing: the stop's ``LocationEvent/motion(_:)`` event says where, and the next fix delivered is the
    /// one that ends the stop.
    case nothing
}
