import Foundation
import LocationCore
import Testing

@testable import LocationGPX

/// A clock whose sleeps return at once, moving time to the deadline (plus a fixed lateness, to show that
/// a late wake-up does not push later deadlines back). Deterministic: the time a fix is delivered is
/// exactly the deadline the source asked for.
final class VirtualClock: Clock, Sendable {
    struct Instant: InstantProtocol {
        var offset: Duration
        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private let state = Locked<(now: Duration, sleeps: Int)>((.zero, 0))
    let lateness: Duration

    init(lateness: Duration = .zero) {
        self.lateness = lateness
    }

    var now: Instant { Instant(offset: state.value.now) }
    var minimumResolution: Duration { .zero }
    /// How many times a sleep actually waited (its deadline was in the future).
    var sleeps: Int { state.value.sleeps }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try Task.checkCancellation()
        state.withLock { state in
            if deadline.offset > state.now {
                state.now = deadline.offset + lateness
                state.sleeps += 1
            }
        }
        await Task.yield()
        try Task.checkCancellation()
    }
}

/// What a source reported, and when on its clock.
struct Recorded: Sendable {
    var time: Duration
    var event: LocationSourceEvent

    var location: Location? {
        if case .location(let location) = event { return location }
        return nil
    }
}

/// Runs a source to its end on a virtual clock; `onEvent` may change the context's mode (synchronously, as
/// the source reports), which is how tests switch modes at an exact point.
func runReplay(
    _ source: GPXReplaySource, mode: AcquisitionMode = .continuous, clock: VirtualClock = VirtualClock(),
    onEvent: @escaping @Sendable (LocationSourceEvent, LocationSourceContext) -> Void = { _, _ in }
) async throws -> [Recorded] {
    let recorded = Locked<[Recorded]>([])
    let contextBox = Locked<LocationSourceContext?>(nil)
    let context = LocationSourceContext(clock: clock, mode: mode) { event in
        recorded.withLock { $0.append(Recorded(time: clock.now.offset, event: event)) }
        if let context = contextBox.value { onEvent(event, context) }
    }
    contextBox.withLock { $0 = context }
    defer { contextBox.withLock { $0 = nil } }  // the sink holds the box: break the cycle
    try await source.run(context)
    return recorded.value
}

extension [Recorded] {
    var locations: [Location] { compactMap(\.location) }
    var deliveryTimes: [Duration] { filter { $0.location != nil }.map(\.time) }
    var statuses: [LocationSourceStatus] {
        compactMap { if case .status(let status) = $0.event { status } else { nil } }
    }
    var errors: [LocationError] {
        compactMap { if case .error(let error) = $0.event { error } else { nil } }
    }
}

/// Writes a GPX file into a temporary directory and returns its path.
func writeGPX(_ text: String, name: String = "replay.gpx") throws -> String {
    let directory = try temporaryDirectory()
    let path = "\(directory)/\(name)"
    try text.write(toFile: path, atomically: true, encoding: .utf8)
    return path
}

/// A track point element.
func trkpt(_ lat: Double, _ lon: Double, _ time: String? = nil, ele: Double? = nil, extra: String = "") -> String {
    var body = ""
    if let ele { body += "<ele>\(ele)</ele>" }
    if let time { body += "<time>\(time)</time>" }
    return #"<trkpt lat="\#(lat)" lon="\#(lon)">\#(body)\#(extra)</trkpt>"#
}

/// A track of segments of track points.
func track(_ segments: [[String]]) -> String {
    "<trk>" + segments.map { "<trkseg>" + $0.joined() + "</trkseg>" }.joined() + "</trk>"
}

/// `2024-05-01T06:MM:SS(.fff)Z` for a number of seconds after 06:00:00.
func t(_ seconds: Double) -> String {
    RFC3339.string(from: date("2024-05-01T06:00:00Z") + seconds)
}

extension Duration {
    static func s(_ seconds: Double) -> Duration { .seconds(seconds) }
}

/// Whether two durations are within a nanosecond of each other.
func close(_ a: Duration, _ b: Duration) -> Bool {
    abs((a - b).seconds) < 1e-9
}

func closeAll(_ a: [Duration], _ b: [Duration]) -> Bool {
    a.count == b.count && zip(a, b).allSatisfy(close)
}

let replayStart = date("2030-01-01T00:00:00Z")
