import Foundation
import LocationCore

/// Turns the points of a GPX file into the replay's schedule: each fix with its track time, reading the
/// file as it goes (constant memory, however long the file and however many loops).
///
/// Track time is measured from the first delivered point (0) and grows along the file as described in
/// <doc:ReplayTiming>; the runner maps it onto the clock.
final class ReplayPlanner {
    struct Step {
        /// When the fix is due, in track time since the first delivered point.
        var trackTime: Duration
        /// The fix, with its timestamp, `isSimulated` and `source` set.
        var location: Location
        /// This point's time minus the latest time before it, when that is zero or negative (the point is
        /// delivered right after the previous one, and flagged).
        var stepBack: TimeInterval?
        /// The line of the point in the file.
        var line: Int
        /// 0 for the first pass through the file, 1 for the first loop, …
        var pass: Int
    }

    let path: String
    let fileName: String
    let kind: GPXPoint.Kind
    private let options: GPXReplaySource.Options
    private let startDate: Date

    private var reader: PrefetchingGPXReader
    private var lookahead: GPXPoint?
    private var pass = 0

    // Per pass.
    private var previous: GPXPoint?
    private var previousRawTimestamp: Date?
    private var latestTime: Date?  // the latest recorded time so far in this pass
    private var rawTrackTime: Duration = .zero
    private var skipped = 0
    private var base: Duration?
    private var emittedInPass = 0
    private var passStart: Duration = .zero
    private var timestampShift: TimeInterval = 0

    // Across passes.
    private var lastTrackTime: Duration?
    private var lastTimestamp: Date?

    /// Opens the file and decides which kind of point to play.
    /// - Parameter startDate: the wall-clock time the replay starts (for rebased and synthesized times).
    /// - Parameter readPath: where the file is read, when it differs from `path` (a copy of standard input);
    ///   errors and fixes still name `path`.
    init(path: String, readPath: String? = nil, options: GPXReplaySource.Options, startDate: Date) throws(GPXError) {
        self.readPath = readPath ?? path
        self.path = path
        self.fileName = URL(fileURLWithPath: path).lastPathComponent
        self.options = options
        self.startDate = startDate
        switch options.selection {
        case .tracks: kind = .trackPoint
        case .routes: kind = .routePoint
        case .waypoints: kind = .waypoint
        case .automatic:
            do throws(GPXError) { kind = try Self.automaticKind(readPath ?? path) } catch { throw Self.renamed(error, path) }
        }
        do throws(GPXError) { reader = try PrefetchingGPXReader(contentsOf: readPath ?? path) } catch {
            throw Self.renamed(error, path)
        }
    }

    /// Where the file is read (see `init`).
    private let readPath: String

    /// `error`, naming `path` rather than where the file was read.
    private static func renamed(_ error: GPXError, _ path: String) -> GPXError {
        var error = error
        error.file = path
        return error
    }

    /// Tracks if the file has a track point, else routes if it has a route point, else waypoints. Reads
    /// only up to the first track point.
    private static func automaticKind(_ path: String) throws(GPXError) -> GPXPoint.Kind {
        let reader = try GPXReader(contentsOf: path)
        var sawRoutePoint = false
        while let point = try reader.next() {
            switch point.kind {
            case .trackPoint: return .trackPoint
            case .routePoint: sawRoutePoint = true
            case .waypoint: break
            }
        }
        return sawRoutePoint ? .routePoint : .waypoint
    }

    /// The next fix in the schedule, or `nil` when the replay is over (also when a pass delivers nothing,
    /// so that a loop never spins on an empty selection).
    func next() throws(GPXError) -> Step? {
        while true {
            guard let point = try takePoint() else {
                guard options.loop, emittedInPass > 0, let lastTrackTime else { return nil }
                try startPass(at: lastTrackTime + options.loopGap)
                continue
            }

            // Track time from the previous point of the selection.
            var step: Duration = .zero
            var stepBack: TimeInterval?
            if let previous {
                if previous.time != nil, let t1 = point.time, let latest = latestTime {
                    // Time runs from the latest time so far: after a step back, later points keep their
                    // place on the timeline instead of all moving later.
                    let seconds = t1.timeIntervalSince(latest)
                    if seconds > 0 { step = .seconds(seconds) } else { stepBack = seconds }
                } else {
                    step = .seconds(Self.distance(previous, point) / options.untimedSpeed)
                }
                if !Self.sameRun(previous, point), let maxGap = options.maxGap { step = min(step, maxGap) }
                rawTrackTime += step
            }
            let rawTimestamp = point.time ?? previousRawTimestamp.map { $0 + step.seconds } ?? startDate
            let derived: (speed: Double?, course: Double?) =
                options.derivesSpeedAndCourse ? try derive(point) : (nil, nil)
            previous = point
            previousRawTimestamp = rawTimestamp
            if let time = point.time { latestTime = max(latestTime ?? time, time) }

            // Where the replay starts.
            switch options.start {
            case .beginning:
                base = .zero
            case .index(let index):
                if skipped < index {
                    skipped += 1
                    continue
                }
                if base == nil { base = rawTrackTime }
            case .offset(let offset):
                if rawTrackTime < offset { continue }
                base = offset
            }
            let trackTime = passStart + (rawTrackTime - (base ?? .zero))

            let timestamp: Date
            switch options.timestamps {
            case .recorded:
                if emittedInPass == 0, pass > 0, let lastTimestamp {
                    timestampShift = (lastTimestamp + options.loopGap.seconds).timeIntervalSince(rawTimestamp)
                }
                timestamp = rawTimestamp + timestampShift
            case .rebasedToNow:
                switch options.pacing {
                case .speedFactor(let factor): timestamp = startDate + trackTime.seconds / factor
                case .asFastAsPossible: timestamp = startDate + trackTime.seconds
                }
            }
            emittedInPass += 1
            lastTrackTime = trackTime
            lastTimestamp = timestamp

            var location = point.makeLocation(timestamp: timestamp)
            if location.speed == nil { location.speed = derived.speed }
            if location.course == nil { location.course = derived.course }
            location.isSimulated = true
            location.source = fileName
            return Step(trackTime: trackTime, location: location, stepBack: stepBack, line: point.line, pass: pass)
        }
    }

    private func startPass(at trackTime: Duration) throws(GPXError) {
        pass += 1
        do throws(GPXError) { reader = try PrefetchingGPXReader(contentsOf: readPath) } catch { throw Self.renamed(error, path) }
        lookahead = nil
        previous = nil
        previousRawTimestamp = nil
        latestTime = nil
        rawTrackTime = .zero
        skipped = 0
        base = nil
        emittedInPass = 0
        passStart = trackTime
    }

    private func takePoint() throws(GPXError) -> GPXPoint? {
        if let lookahead {
            self.lookahead = nil
            return lookahead
        }
        return try readPoint()
    }

    private func peekPoint() throws(GPXError) -> GPXPoint? {
        if lookahead == nil { lookahead = try readPoint() }
        return lookahead
    }

    private func readRenamed() throws(GPXError) -> GPXPoint? {
        do throws(GPXError) { return try reader.next() } catch { throw Self.renamed(error, path) }
    }

    private func readPoint() throws(GPXError) -> GPXPoint? {
        while let point = try readRenamed() {
            if point.kind == kind { return point }
        }
        return nil
    }

    /// Speed and course from the previous point of the same segment, or else towards the next one.
    private func derive(_ point: GPXPoint) throws(GPXError) -> (speed: Double?, course: Double?) {
        guard point.speed == nil || point.course == nil else { return (nil, nil) }
        if let previous, Self.sameRun(previous, point) { return derive(from: previous, to: point) }
        if let next = try peekPoint(), Self.sameRun(point, next) { return derive(from: point, to: next) }
        return (nil, nil)
    }

    private func derive(from a: GPXPoint, to b: GPXPoint) -> (speed: Double?, course: Double?) {
        let (distance, bearing) = Self.distanceAndBearing(a, b)
        var speed: Double?
        if let t0 = a.time, let t1 = b.time {
            let seconds = t1.timeIntervalSince(t0)
            speed = seconds > 0 ? distance / seconds : nil
        } else {
            speed = options.untimedSpeed
        }
        let course = distance > 0 ? bearing : nil
        return (speed, course)
    }

    /// Whether two points belong to the same segment (track points), route, or the waypoint list.
    private static func sameRun(_ a: GPXPoint, _ b: GPXPoint) -> Bool {
        a.kind == b.kind && a.container == b.container && a.segment == b.segment
    }

    private static func distance(_ a: GPXPoint, _ b: GPXPoint) -> Double {
        Location.distance(
            fromLatitude: a.latitude, longitude: a.longitude, toLatitude: b.latitude, longitude: b.longitude)
    }

    /// The great-circle distance in metres from `a` to `b` (as ``Location/distance(from:)``) and the
    /// initial bearing in degrees clockwise from true north, in [0, 360), from one set of sines and
    /// cosines: a replay derives both for every point, and the trigonometry is most of its cost.
    static func distanceAndBearing(_ a: GPXPoint, _ b: GPXPoint) -> (distance: Double, bearing: Double) {
        let earthRadius = Location.meanEarthRadius
        let lat1 = a.latitude * .pi / 180, lat2 = b.latitude * .pi / 180
        let dLon = (b.longitude - a.longitude) * .pi / 180
        let sinLat1 = sin(lat1), cosLat1 = cos(lat1), sinLat2 = sin(lat2), cosLat2 = cos(lat2)
        let sinHalfDLat = sin((lat2 - lat1) / 2)
        let sinHalfDLon = sin(dLon / 2), cosHalfDLon = cos(dLon / 2)
        let h = sinHalfDLat * sinHalfDLat + cosLat1 * cosLat2 * sinHalfDLon * sinHalfDLon
        let distance = 2 * earthRadius * asin(min(1, h.squareRoot()))
        // sin and cos of the whole longitude difference, from its half.
        let sinDLon = 2 * sinHalfDLon * cosHalfDLon
        let cosDLon = 1 - 2 * sinHalfDLon * sinHalfDLon
        let y = sinDLon * cosLat2
        let x = cosLat1 * sinLat2 - sinLat1 * cosLat2 * cosDLon
        let degrees = atan2(y, x) * 180 / .pi
        return (distance, degrees < 0 ? degrees + 360 : (degrees >= 360 ? 0 : degrees))
    }
}
