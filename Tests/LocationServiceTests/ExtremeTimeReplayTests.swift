import Foundation
import LocationCore
import LocationGPX
import Testing

/// GPX times at the edges of what the format can write: years 0001 and 9999, spans of thousands of years.
@Suite("Replay of extreme GPX times")
struct ExtremeTimeReplayTests {
    /// A GPX 1.0 file with two waypoints dated 1234 and 4096, as converters' reference sets hold.
    static let waypoints = """
        <?xml version="1.0"?>
        <gpx version="1.0" creator="test" xmlns="http://www.topografix.com/GPX/1/0">
        <wpt lat="52.5" lon="13.4"><time>1234-12-12T00:00:00Z</time></wpt>
        <wpt lat="52.6" lon="13.5"><time>4096-12-12T00:00:00Z</time></wpt>
        </gpx>
        """

    /// A track from the first second of year 0001 to the last of year 9999.
    static let wholeCalendar = """
        <?xml version="1.0"?>
        <gpx version="1.1" creator="test" xmlns="http://www.topografix.com/GPX/1/1"><trk><trkseg>
        <trkpt lat="52.5" lon="13.4"><time>0001-01-01T00:00:00Z</time></trkpt>
        <trkpt lat="52.55" lon="13.45"><time>0001-01-01T00:00:01Z</time></trkpt>
        <trkpt lat="52.6" lon="13.5"><time>9999-12-31T23:59:59Z</time></trkpt>
        </trkseg></trk></gpx>
        """

    @Test(
        "times from year 0001 to 9999 replay in every format, with and without a lifecycle, never trapping",
        arguments: [
            ["--format", "text"], ["--format", "json"], ["--format", "gpx"],
            ["--format", "json", "--lifecycle", "0s:background,10s:suspended"],
            ["--format", "json", "--lifecycle", "99999999999s:background"],
            ["--format", "json", "--policy", "reduced", "--max-gap", "1e12"],
        ])
    func wholeCalendarReplays(extra: [String]) throws {
        let directory = TemporaryDirectory()
        for (name, text) in [("calendar.gpx", Self.wholeCalendar), ("waypoints.gpx", Self.waypoints)] {
            let path = directory.file(name)
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            let result = try Tool.run("locationctl", ["replay", path, "--fast"] + extra, timeout: 30, in: directory)
            #expect(!result.signaled && result.status == 0, "\(name) \(extra): \(result.status) \(result.stderr)")
            // Text writes a date and time with a space between them, JSON and GPX RFC 3339's T.
            let separator = extra == ["--format", "text"] ? " " : "T"
            #expect(result.stdout.contains(name == "calendar.gpx" ? "0001-01-01\(separator)00:00:0" : "1234-12-12\(separator)00:00:00"), "\(result.stdout)")
        }
    }

    @Test("year 0000 replays as text and JSON lines; as GPX, which cannot hold it, it is exit 65 naming the time")
    func yearZero() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("zero.gpx")
        try Data(Self.wholeCalendar.replacingOccurrences(of: "0001-01-01T00:00:00Z", with: "0000-01-01T00:00:00Z").utf8)
            .write(to: URL(fileURLWithPath: path))
        for (format, time) in [("text", "0000-01-01 00:00:00.0Z"), ("json", #""time":-62167219200,"timestamp":"0000-01-01T00:00:00.000Z""#)] {
            let result = try Tool.run("locationctl", ["replay", path, "--fast", "--format", format], in: directory)
            #expect(result.status == 0 && result.stdout.contains(time), "\(format): \(result.stdout) \(result.stderr)")
        }
        let gpx = try Tool.run("locationctl", ["replay", path, "--fast", "--format", "gpx"], in: directory)
        #expect(gpx.status == 65 && !gpx.signaled)
        #expect(gpx.stderr.contains("timestamp 0000-01-01T00:00:00Z lies outside the years 0001–9999"), "\(gpx.stderr)")
    }

    @Test("waypoints dated 1234 and 4096 written as GPX to a file: a valid file holding both")
    func waypointsToAFile() throws {
        let directory = TemporaryDirectory()
        let input = directory.file("waypoints.gpx")
        try Data(Self.waypoints.utf8).write(to: URL(fileURLWithPath: input))
        let output = directory.file("copy.gpx")
        let result = try Tool.run("locationctl", ["replay", input, "--fast", "--format", "gpx", "--output", output], in: directory)
        #expect(result.status == 0, "\(result.stderr)")
        let copied = try GPXReader.readLocations(contentsOf: output, kinds: [.trackPoint])
        #expect(copied.map(\.timestamp) == [
            try #require(RFC3339.parse("1234-12-12T00:00:00Z")?.date), try #require(RFC3339.parse("4096-12-12T00:00:00Z")?.date),
        ])
    }
}
