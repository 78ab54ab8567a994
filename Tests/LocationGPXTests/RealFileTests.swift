import Foundation
import LocationCore
import Testing

@testable import LocationGPX

/// Every real file in ../shared/testdata/gpx: point counts, and every point's coordinate, `<ele>` and
/// `<time>` against the file's own text.
@Suite(.enabled(if: TestData.isAvailable, "real GPX files not found: set GPX_TESTDATA or check ../shared/testdata/gpx"))
struct RealFileTests {
    struct Expected: Sendable, CustomTestStringConvertible {
        var file: String
        var tracks = 0, routes = 0, waypoints = 0, timed = 0
        var testDescription: String { file }
    }

    static let files: [Expected] = [
        Expected(file: "coregpx__GPXTest-TrackPointOnly.gpx", tracks: 4142, timed: 4142),
        Expected(file: "gpsbabel__expertgps.gpx", tracks: 64, routes: 46, waypoints: 86, timed: 195),
        Expected(file: "gpsbabel__mtk_logger_m241_multiple_tracks.gpx", tracks: 14263, timed: 14263),
        Expected(file: "gpxpy__cerknicko-without-times.gpx", tracks: 296, waypoints: 7, timed: 5),
        Expected(file: "gpxpy__gpx1.0_with_all_fields.gpx", tracks: 1, routes: 5, waypoints: 2, timed: 3),
        Expected(file: "gpxpy__gpx1.1_with_all_fields.gpx", tracks: 1, routes: 5, waypoints: 2, timed: 3),
        Expected(file: "gpxpy__route.gpx", routes: 55),
        Expected(file: "gpxpy__track-with-empty-segment.gpx", tracks: 9, timed: 9),
        Expected(file: "gpxpy__track_with_speed.gpx", tracks: 3, timed: 3),
        Expected(file: "gpxpy__unicode_with_bom.gpx", waypoints: 1, timed: 1),
    ]

    @Test func everyFileInTheFolderIsCovered() throws {
        let present = try FileManager.default.contentsOfDirectory(atPath: TestData.directory!)
            .filter { $0.hasSuffix(".gpx") }.sorted()
        #expect(present == Self.files.map(\.file).sorted())
    }

    @Test(arguments: files)
    func countsAndValuesMatchTheFileText(_ expected: Expected) throws {
        let path = TestData.path(expected.file)
        let points = try GPXReader.readPoints(contentsOf: path)
        #expect(points.count { $0.kind == .trackPoint } == expected.tracks)
        #expect(points.count { $0.kind == .routePoint } == expected.routes)
        #expect(points.count { $0.kind == .waypoint } == expected.waypoints)
        #expect(points.count { $0.time != nil } == expected.timed)

        // An independent oracle: the point elements found in the text with a regular expression.
        let oracle = try Self.pointsInText(of: path)
        try #require(oracle.count == points.count)
        for (point, text) in zip(points, oracle) {
            #expect(point.kind.rawValue == text.kind, "line \(point.line)")
            #expect(point.latitude == Double(text.lat)!, "line \(point.line)")
            #expect(point.longitude == Double(text.lon)!, "line \(point.line)")
            #expect(point.elevation == text.ele.flatMap { Double($0) }, "line \(point.line)")
            #expect(point.time == text.time.flatMap { RFC3339.parse($0)?.date }, "line \(point.line)")
        }
    }

    @Test(arguments: files)
    func asyncSequenceAndForEachAgreeWithNext(_ expected: Expected) async throws {
        let path = TestData.path(expected.file)
        let viaNext = try GPXReader.readPoints(contentsOf: path)
        var viaAsync: [GPXPoint] = []
        for try await point in GPXReader.points(contentsOf: path) { viaAsync.append(point) }
        var viaForEach: [GPXPoint] = []
        try GPXReader(contentsOf: path).forEach { viaForEach.append($0) }
        #expect(viaAsync == viaNext)
        #expect(viaForEach == viaNext)
    }

    @Test func trackPointOnlyFileExactPoints() throws {
        let points = try GPXReader.readPoints(contentsOf: TestData.path("coregpx__GPXTest-TrackPointOnly.gpx"))
        // <trkpt lat="35.675032" lon="139.722148"> <ele>31.098352</ele> <time>2018-11-29T01:48:58Z</time>
        #expect(points[0].latitude == 35.675032)
        #expect(points[0].longitude == 139.722148)
        #expect(points[0].elevation == 31.098352)
        #expect(points[0].time == Date(timeIntervalSince1970: 1_543_456_138))
        #expect(points[0].line == 5)
        // Points 2 and 3 share 2018-11-29T01:49:00Z (Δt = 0 in a real recording).
        #expect(points[1].time == points[2].time)
        #expect(points[2].latitude == 35.675356 && points[2].elevation == 20.6785)
        #expect(points.last?.time == date("2018-11-29T09:23:18Z"))
        #expect(points.allSatisfy { $0.container == 0 && $0.segment == 0 })
        #expect(points.map(\.index) == Array(0..<4142))
    }

    @Test func mtkLoggerHasSixTracksAndGPX10Speed() throws {
        let points = try GPXReader.readPoints(contentsOf: TestData.path("gpsbabel__mtk_logger_m241_multiple_tracks.gpx"))
        #expect(Set(points.map(\.container)) == Set(0..<6))
        #expect(points[0].speed == 0.858250)
        #expect(points[0].name == "TP000001")
        #expect(points[0].time == date("2012-11-07T09:11:35Z"))
        #expect(points.allSatisfy { $0.speed != nil })
    }

    @Test func gpx10AllFields() throws {
        let points = try GPXReader.readPoints(contentsOf: TestData.path("gpxpy__gpx1.0_with_all_fields.gpx"))
        let waypoint = try #require(points.first)
        #expect(waypoint.kind == .waypoint)
        #expect(waypoint.latitude == 12.3 && waypoint.longitude == 45.6)
        #expect(waypoint.elevation == 75.1)
        #expect(waypoint.time == date("2013-01-02T02:03:00Z"))
        #expect(waypoint.geoidHeight == 2.0)
        #expect(waypoint.fix == .twoDimensional)
        #expect(waypoint.satellites == 5)
        #expect(waypoint.hdop == 6 && waypoint.vdop == 7 && waypoint.pdop == 8)
        #expect(waypoint.name == "example name")
        #expect(waypoint.sourceName == "example src")
        let location = try waypoint.location()
        #expect(location.altitude == 75.1)
        #expect(location.ellipsoidalAltitude == 75.1 + 2.0)
        #expect(location.fixMode == .twoDimensional)
        #expect(location.satellitesUsed == 5)
        #expect(location.horizontalAccuracy == nil, "hdop is not an accuracy")

        let track = try #require(points.first { $0.kind == .trackPoint })
        // <time>2013-01-01T12:00:04</time>: no zone, read as UTC and flagged.
        #expect(track.time == date("2013-01-01T12:00:04Z"))
        #expect(track.timeHasZone == false)
        #expect(track.fix == .threeDimensional)
        #expect(track.satellites == 100)
        let routes = points.filter { $0.kind == .routePoint }
        #expect(routes.map(\.container) == [0, 0, 0, 1, 1])
        #expect(routes.map(\.index) == [0, 1, 2, 0, 1])
    }

    @Test func gpx11AllFieldsIgnoresUnknownExtensions() throws {
        let points = try GPXReader.readPoints(contentsOf: TestData.path("gpxpy__gpx1.1_with_all_fields.gpx"))
        let track = try #require(points.first { $0.kind == .trackPoint })
        #expect(track.latitude == 10.1 && track.longitude == -20.2)
        #expect(track.elevation == 11.1)
        #expect(track.geoidHeight == 13)
        #expect(track.hdop == 101)
    }

    @Test func routeWithoutTimes() throws {
        let points = try GPXReader.readPoints(contentsOf: TestData.path("gpxpy__route.gpx"))
        #expect(points.count == 55)
        #expect(points[0].latitude == 45.2787641494 && points[0].longitude == 13.726695478)
        #expect(points[0].name == "#001")
        #expect(points.allSatisfy { $0.time == nil && $0.elevation == nil })
        let untimed = #expect(throws: GPXError.self) { try GPXReader.readLocations(contentsOf: TestData.path("gpxpy__route.gpx")) }
        #expect(untimed?.code == .missingTime, "\(String(describing: untimed))")
        #expect(untimed?.file == TestData.path("gpxpy__route.gpx"))
        #expect(untimed?.message == "<rtept> has no <time>, and no timestamp was given for untimed points")
        let epoch = Date(timeIntervalSince1970: 0)
        let locations = try GPXReader.readLocations(contentsOf: TestData.path("gpxpy__route.gpx"), timestampIfUntimed: epoch)
        #expect(locations.count == 55 && locations.allSatisfy { $0.timestamp == epoch })
    }

    @Test func emptySegmentAddsNoPoints() throws {
        let points = try GPXReader.readPoints(contentsOf: TestData.path("gpxpy__track-with-empty-segment.gpx"))
        #expect(points.count == 9)
        #expect(points.allSatisfy { $0.segment == 0 })
    }

    @Test func byteOrderMarkFractionAndEmptyFix() throws {
        let points = try GPXReader.readPoints(contentsOf: TestData.path("gpxpy__unicode_with_bom.gpx"))
        let point = try #require(points.first)
        #expect(point.time == date("2016-05-27T10:08:47.8Z"))
        #expect(point.elevation == -14.6)
        #expect(point.fix == nil, "<fix></fix> is absent, not an error")
        #expect(point.satellites == 4)
        #expect(point.hdop == 16.2)
    }

    @Test func readLocationsFiltersByKind() throws {
        let path = TestData.path("gpsbabel__expertgps.gpx")
        let tracks = try GPXReader.readLocations(contentsOf: path, kinds: [.trackPoint])
        #expect(tracks.count == 64)
        #expect(tracks[0].latitude == 30.062183 && tracks[0].longitude == -91.61035)
        #expect(tracks[0].altitude == 1 && tracks[0].timestamp == date("2002-05-25T17:06:21Z"))
        #expect(tracks[1].altitude == nil && tracks[1].timestamp == date("2002-05-25T17:09:55Z"))
    }

    // MARK: - Oracle

    struct TextPoint {
        var kind: String
        var lat: String
        var lon: String
        var ele: String?
        var time: String?
    }

    /// The point elements of a file, found with regular expressions on its text (not with XML).
    static func pointsInText(of path: String) throws -> [TextPoint] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let text = String(data: data, encoding: .utf8) ?? String(decoding: data, as: UTF8.self)
        let element = try NSRegularExpression(
            pattern: #"<(trkpt|rtept|wpt)\b([^>]*?)(/>|>(.*?)</\1>)"#, options: [.dotMatchesLineSeparators])
        func first(_ pattern: String, in string: String) -> String? {
            guard let regex = try? NSRegularExpression(pattern: pattern, options: [.dotMatchesLineSeparators]),
                let match = regex.firstMatch(in: string, range: NSRange(string.startIndex..., in: string)),
                let range = Range(match.range(at: 1), in: string)
            else { return nil }
            return String(string[range])
        }
        return element.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { match in
            let kind = String(text[Range(match.range(at: 1), in: text)!])
            let attributes = String(text[Range(match.range(at: 2), in: text)!])
            let body = Range(match.range(at: 4), in: text).map { String(text[$0]) } ?? ""
            // Only the point's own <ele>/<time>, not ones nested deeper (e.g. in <extensions>).
            return TextPoint(
                kind: kind,
                lat: first(#"\blat="([^"]*)""#, in: attributes)!,
                lon: first(#"\blon="([^"]*)""#, in: attributes)!,
                ele: first(#"<ele>\s*([^<]*?)\s*</ele>"#, in: body),
                time: first(#"<time>\s*([^<]*?)\s*</time>"#, in: body))
        }
    }
}
