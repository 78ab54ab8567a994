/// Something that produces position fixes: live gpsd, a replayed GPX file, or a test script.
///
/// The manager never knows which source it has. It starts a source by calling ``run(_:)`` in a task of
/// its own and stops it by cancelling that task. While running, the source reads the acquisition mode
/// from the context (``LocationSourceContext/mode``, and ``LocationSourceContext/nextMode(after:)`` to
/// wait for a change) and reports everything through the context:
///
/// - In ``AcquisitionMode/continuous`` mode it delivers one location per receiver epoch.
/// - In ``AcquisitionMode/dutyCycled(_:)`` mode it acquires one fix (the first that meets
///   ``DutyCycle/desiredAccuracy``, else the best seen within ``DutyCycle/acquisitionTimeout``), delivers
///   it, and then rests until ``DutyCycle/interval`` has passed since the acquisition began, doing as
///   little work as it can in between.
///
/// Sources that can simply be opened and closed on demand adopt ``ListeningLocationSource`` and get
/// both modes implemented for them.
public protocol LocationSource: Sendable {
    /// A short human-readable name, such as `gpsd localhost:2947` or `replay track.gpx`.
    var name: String { get }

    /// Runs until the task is cancelled or the source has nothing more to deliver.
    ///
    /// Returning normally means the source ran out (a replay reached its end); throwing means it failed
    /// for good. Transient failures that the source recovers from by itself are reported as
    /// ``LocationSourceEvent/error(_:)`` events instead.
    func run(_ context: LocationSourceContext) async throws
}

/// What a source reports to the manager.
public enum LocationSourceEvent: Sendable, Hashable {
    /// One fix: one receiver epoch, or the result of one duty-cycled acquisition.
    case location(Location)
    /// The source's connection or fix state changed.
    case status(LocationSourceStatus)
    /// Something went wrong that the delegate should hear about (an outage, a lost fix, no fix in time).
    case error(LocationError)
    /// How many satellites the receiver sees while it has no fix, so that a person waiting knows whether
    /// the sky is in view: reported just before ``LocationSourceStatus/noFix`` when the count is known,
    /// then whenever it changes until a fix comes. Never negative.
    case satellitesInView(Int)
    /// Fixes that another holder kept for the app while it could not take them (a daemon, while the app's
    /// process was gone), oldest first. The manager adds them to its own held batch, so that they reach the
    /// app as one batch when it returns to the foreground, or at once, marked restored, when it is already
    /// there; it drops those it already has, by fix time, so a holder may hand the same fixes over again.
    case held(HeldLocations)
}

/// Fixes handed over by another holder (``LocationSourceEvent/held(_:)``), with what to do once the app has them.
///
/// The holder lets go of them only when `whenDelivered` runs: that is, once the delegate has had them (in
/// the batch they went out in), or had already had each of them. It does not run if the manager stops first;
/// the holder then keeps them, and hands them over again next time.
public struct HeldLocations: Sendable, Hashable {
    /// The fixes, oldest first.
    public var locations: [Location]
    private let receipt: Receipt?

    /// Creates a hand-over of `locations`; `whenDelivered` runs at most once, after the delegate had them.
    public init(_ locations: [Location], whenDelivered: (@Sendable () -> Void)? = nil) {
        self.locations = locations
        receipt = whenDelivered.map(Receipt.init)
    }

    /// Tells the holder that the app has the fixes (the manager calls it, once).
    package func delivered() { receipt?.run() }

    /// Whether there is a holder to tell.
    package var hasReceipt: Bool { receipt != nil }

    public static func == (lhs: HeldLocations, rhs: HeldLocations) -> Bool {
        lhs.locations == rhs.locations && lhs.receipt === rhs.receipt
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(locations)
        hasher.combine(receipt.map(ObjectIdentifier.init))
    }

    /// The holder's callback; equal only to itself.
    private final class Receipt: Sendable {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
}

/// The state of a source's connection and fix, for status displays and delegates.
public enum LocationSourceStatus: String, Sendable, Hashable, Codable, CaseIterable {
    /// Not started, or stopped.
    case idle
    /// Opening the connection or file.
    case connecting
    /// Connected and reading, but the receiver has no fix.
    case noFix = "no-fix"
    /// Connected and delivering fixes.
    case hasFix = "has-fix"
    /// Resting between duty-cycled acquisitions.
    case resting
    /// Cannot be reached; the source keeps retrying if it can.
    case unavailable
    /// Ran out of data (a replay reached its end).
    case ended
}

/// How the manager wants a source to run.
public enum AcquisitionMode: Sendable, Hashable {
    /// Every epoch, as it arrives (the high-accuracy policy).
    case continuous
    /// One fix per interval, then rest (the reduced-accuracy policy).
    case dutyCycled(DutyCycle)
}

/// The parameters of duty-cycled acquisition.
public struct DutyCycle: Sendable, Hashable {
    /// Time from the start of one acquisition to the start of the next.
    public var interval: Duration
    /// An acquisition ends at the first fix whose horizontal accuracy is at most this many metres;
    /// `nil` takes the first fix.
    public var desiredAccuracy: Double?
    /// The longest an acquisition listens; at the end the best fix seen is delivered.
    public var acquisitionTimeout: Duration

    /// Creates duty-cycle parameters.
    public init(interval: Duration, desiredAccuracy: Double?, acquisitionTimeout: Duration) {
        self.interval = interval
        self.desiredAccuracy = desiredAccuracy
        self.acquisitionTimeout = acquisitionTimeout
    }
}
