import Foundation

/// Tells standing still from moving with GNSS fixes alone: speed, accuracy and how far the positions drift.
///
/// - **Moving → stationary** when, over the fixes of the last ``Configuration/window`` (fix time; at least
///   the last ``Configuration/pauseCount`` of them, spanning the whole window), the centroid of the newer half
///   is within ``Configuration/radius`` (8 m) of the older half's, and that drift over the time between the
///   halves is a speed below ``Configuration/pauseSpeed`` (0.5 m/s). The drift of two centroids, not the
///   spread of single fixes nor their reported speeds, is what tells a slow walk from noise: averaging a
///   dozen fixes divides a parked receiver's noise by more than three, while a walk at 0.4 m/s drifts 12 m in
///   a 60 s window. The fixes must also stay near their mean (RMS distance within the radius plus 1.5 ×
///   their median accuracy), or an out-and-back (a U-turn, whose halves have the same mean) would pass. (A
///   reported speed is not trusted for a stop: a replay's speeds are made of noisy positions, several m/s
///   while parked.)
/// - **Stationary → moving** at the ``Configuration/resumeCount``th fix in a row (3) that lies clearly away
///   from where it stopped (`distance − accuracy > 2 × radius`), or reports a speed above
///   ``Configuration/resumeSpeed`` (0.9 m/s) and lies outside the stop (`distance − accuracy > radius`). The
///   dead band and the counts each way keep one noisy fix from flipping the state.
/// - Fixes worse than ``Configuration/accuracyLimit`` (50 m) change nothing either way. A fix without an
///   accuracy counts 5 m per unit of HDOP, or 10 m without an HDOP either (a GPX file's track).
///
/// While stationary, ``centroid`` is where it stopped: the mean of the newer half of the deciding window,
/// refined by each still fix after it (a running mean, so it moves by a fix's noise divided by the count).
public struct MotionDetector: Sendable {
    /// The detector's thresholds.
    public struct Configuration: Sendable, Hashable {
        /// Below this speed (m/s) a fix may count as still. Default 0.5.
        public var pauseSpeed: Double
        /// Above this speed (m/s) a fix counts as moving. Default 0.9.
        public var resumeSpeed: Double
        /// The drift (metres) between the window's two halves under which it is still; twice this away from
        /// the stop (beyond the fix's accuracy) counts as moving. Default 8.
        public var radius: Double
        /// The window of fix time whose fixes decide a stop, seconds. Default 60.
        public var window: Double
        /// The fewest fixes that decide a stop. Default 5.
        public var pauseCount: Int
        /// Moving fixes in a row that end a stop. Default 3.
        public var resumeCount: Int
        /// Fixes less accurate than this (metres) are ignored. Default 50.
        public var accuracyLimit: Double

        /// Thresholds; every argument defaults to the documented value.
        public init(
            pauseSpeed: Double = 0.5, resumeSpeed: Double = 0.9, radius: Double = 8, window: Double = 60,
            pauseCount: Int = 5, resumeCount: Int = 3, accuracyLimit: Double = 50
        ) {
            self.pauseSpeed = pauseSpeed
            self.resumeSpeed = max(resumeSpeed, pauseSpeed)
            self.radius = radius
            self.window = window
            self.pauseCount = max(2, pauseCount)
            self.resumeCount = max(1, resumeCount)
            self.accuracyLimit = accuracyLimit
        }
    }

    /// The thresholds.
    public let configuration: Configuration
    /// Metres of error per unit of HDOP, for a fix that reports an HDOP and no accuracy.
    public static let metresPerHDOP = 5.0
    /// The accuracy taken for a fix that reports neither (a GPX file without them), metres.
    public static let unknownAccuracy = 10.0
    /// The current state.
    public private(set) var state: MotionState = .moving
    /// Where the receiver stopped, while ``state`` is stationary.
    public private(set) var centroid: (latitude: Double, longitude: Double)?
    private var recent: [Location] = []
    private var stillCount = 0
    private var movingInRow = 0

    /// A detector starting in the moving state.
    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    /// Takes the next fix (in fix-time order); the new state when this fix changed it.
    ///
    /// - Parameters:
    ///   - fix: The fix.
    ///   - sparse: The fixes are checks far apart (a paused receiver): one fix that has clearly moved ends
    ///     the stop, rather than ``Configuration/resumeCount`` in a row.
    public mutating func evaluate(_ fix: Location, sparse: Bool = false) -> MotionState? {
        let accuracy = Self.accuracy(of: fix)
        guard fix.hasValidCoordinate, accuracy.isFinite, accuracy <= configuration.accuracyLimit else { return nil }
        if let last = recent.last, fix.timestamp <= last.timestamp { return nil }
        switch state {
        case .moving:
            recent.append(fix)
            // The window: the fixes of the last `window` seconds, and at least the last `pauseCount` (a
            // background app gets a fix a minute).
            let start = fix.timestamp.addingTimeInterval(-configuration.window)
            var drop = 0
            while recent.count - drop > configuration.pauseCount, recent[drop + 1].timestamp <= start { drop += 1 }
            if drop > 0 { recent.removeFirst(drop) }
            guard isStill() else { return nil }
            // The newer half is surely still (the older may hold the last steps of the walk).
            let newer = recent[(recent.count / 2)...]
            centroid = Self.mean(newer)
            stillCount = newer.count
            movingInRow = 0
            state = .stationary
            return .stationary
        case .stationary:
            guard let centroid else { return nil }
            let beyond =
                Location.distance(fromLatitude: centroid.latitude, longitude: centroid.longitude, toLatitude: fix.latitude, longitude: fix.longitude)
                - accuracy
            // Far from the stop; or fast, and out of it (a speed alone is not trusted: a replay's speeds are
            // made of noisy positions).
            let away = beyond > 2 * configuration.radius
            let fast = (fix.speed ?? 0) > configuration.resumeSpeed && beyond > configuration.radius
            if away || fast {
                movingInRow += 1
                guard movingInRow >= (sparse ? 1 : configuration.resumeCount) else { return nil }
                state = .moving
                self.centroid = nil
                recent = [fix]
                movingInRow = 0
                return .moving
            }
            movingInRow = 0
            // A still fix refines the stop: the running mean of every still fix so far.
            stillCount += 1
            let weight = 1 / Double(stillCount)
            self.centroid = (
                centroid.latitude + (fix.latitude - centroid.latitude) * weight,
                centroid.longitude + Self.longitudeDelta(from: centroid.longitude, to: fix.longitude) * weight
            )
            return nil
        }
    }

    /// Whether the window's fixes say the receiver stands still.
    private func isStill() -> Bool {
        guard recent.count >= configuration.pauseCount, let first = recent.first, let last = recent.last,
            last.timestamp.timeIntervalSince(first.timestamp) >= configuration.window
        else { return false }
        let half = recent.count / 2
        let older = Self.mean(recent[..<half])
        let newer = Self.mean(recent[half...])
        let drift = Location.distance(
            fromLatitude: older.latitude, longitude: older.longitude, toLatitude: newer.latitude, longitude: newer.longitude)
        let apart = Self.meanTime(recent[half...]) - Self.meanTime(recent[..<half])
        guard drift <= configuration.radius, drift < configuration.pauseSpeed * max(apart, 1) else { return false }
        // Out and back (a U-turn) has halves with the same mean: the fixes must also stay close to it, within
        // the radius and what their accuracy explains (the RMS distance of noise of σ is σ√2).
        let centre = Self.mean(recent[...])
        let squares = recent.reduce(0.0) { sum, fix in
            let distance = Location.distance(fromLatitude: centre.latitude, longitude: centre.longitude, toLatitude: fix.latitude, longitude: fix.longitude)
            return sum + distance * distance
        }
        let accuracies = recent.map { Self.accuracy(of: $0) }.sorted()
        let spread = (squares / Double(recent.count)).squareRoot()
        return spread <= configuration.radius + 1.5 * accuracies[accuracies.count / 2]
    }

    /// The mean position of `fixes`, across the antimeridian too.
    private static func mean(_ fixes: ArraySlice<Location>) -> (latitude: Double, longitude: Double) {
        guard let first = fixes.first else { return (0, 0) }
        var latitude = 0.0
        var longitude = 0.0
        for fix in fixes {
            latitude += fix.latitude
            longitude += longitudeDelta(from: first.longitude, to: fix.longitude)
        }
        let count = Double(fixes.count)
        var meanLongitude = first.longitude + longitude / count
        if meanLongitude > 180 { meanLongitude -= 360 }
        if meanLongitude < -180 { meanLongitude += 360 }
        return (latitude / count, meanLongitude)
    }

    private static func accuracy(of fix: Location) -> Double {
        fix.horizontalAccuracy ?? fix.hdop.map { $0 * metresPerHDOP } ?? unknownAccuracy
    }

    private static func meanTime(_ fixes: ArraySlice<Location>) -> Double {
        guard let first = fixes.first else { return 0 }
        return fixes.reduce(0) { $0 + $1.timestamp.timeIntervalSince(first.timestamp) } / Double(fixes.count)
            + first.timestamp.timeIntervalSinceReferenceDate
    }

    /// `to − from` in degrees of longitude, the short way round.
    private static func longitudeDelta(from: Double, to: Double) -> Double {
        var delta = to - from
        if delta > 180 { delta -= 360 }
        if delta < -180 { delta += 360 }
        return delta
    }
}

/// Whether the receiver stands still, as a ``MotionDetector`` decided it.
public enum MotionState: String, Sendable, Hashable, Codable, CaseIterable {
    /// Moving (the start).
    case moving
    /// Standing still.
    case stationary
}

/// A change of ``MotionState``, at the fix that decided it.
public struct MotionEvent: Sendable, Hashable {
    /// The new state.
    public var state: MotionState
    /// The fix that decided it; for a stop, its position is where the receiver stopped (the centroid).
    public var location: Location

    /// An event.
    public init(state: MotionState, location: Location) {
        self.state = state
        self.location = location
    }
}
