import Foundation
import LocationCore

/// The first pass over a track: its extent, time span, length and typical fix interval per phase, in
/// constant memory whatever the number of points.
package struct TrackSummary: Sendable, Hashable {
    /// Points seen.
    package private(set) var pointCount = 0
    /// Southernmost and northernmost latitudes.
    package private(set) var minLatitude = Double.infinity, maxLatitude = -Double.infinity
    /// Westernmost and easternmost longitudes, unwrapped along the track (they may pass ±180).
    package private(set) var minLongitude = Double.infinity, maxLongitude = -Double.infinity
    /// The earliest and latest fix times (seconds since 1970), if any point has a time.
    package private(set) var firstTime: Double?, lastTime: Double?
    /// The length of the line through the points, in metres (great-circle steps).
    package private(set) var distance = 0.0
    /// Phases that have at least one point.
    package private(set) var phases: Set<PlotPhase> = []
    /// Whether any point has a horizontal accuracy.
    package private(set) var hasAccuracy = false
    /// Held batches, fix losses seen.
    package private(set) var batchCount = 0, fixLossCount = 0
    private var intervals = [IntervalHistogram](repeating: IntervalHistogram(), count: PlotPhase.allCases.count)
    private var unwrapper = LongitudeUnwrapper()
    private var cursor = PhaseCursor()
    private var previous: PlotPoint?

    /// An empty summary.
    package init() {}

    /// Takes in the next item of the track.
    package mutating func add(_ item: PlotItem) {
        switch item {
        case .point(let point):
            let phase = cursor.phaseOfNextPoint()
            pointCount += 1
            phases.insert(phase)
            minLatitude = min(minLatitude, point.latitude)
            maxLatitude = max(maxLatitude, point.latitude)
            let longitude = unwrapper.unwrap(point.longitude)
            minLongitude = min(minLongitude, longitude)
            maxLongitude = max(maxLongitude, longitude)
            if point.horizontalAccuracy != nil { hasAccuracy = true }
            if let time = point.time {
                firstTime = min(firstTime ?? time, time)
                lastTime = max(lastTime ?? time, time)
            }
            if let previous {
                distance += Location.distance(
                    fromLatitude: previous.latitude, longitude: previous.longitude,
                    toLatitude: point.latitude, longitude: point.longitude)
                if let time = point.time, let before = previous.time { intervals[phase.rawValue].add(time - before) }
            }
            previous = point
        case .phase, .batch:
            if case .batch = item { batchCount += 1 }
            cursor.add(item)
        case .fixLoss:
            fixLossCount += 1
        }
    }

    /// The median interval between fixes of a phase, in seconds, when at least two timed points had it.
    package func typicalInterval(_ phase: PlotPhase) -> Double? {
        intervals[phase.rawValue].median
    }

    /// The latitude and unwrapped longitude of the centre of the extent.
    package var centre: (latitude: Double, longitude: Double) {
        ((minLatitude + maxLatitude) / 2, (minLongitude + maxLongitude) / 2)
    }
}
