import Foundation
import LocationCore
import LocationGPX
import Testing

/// `--region` on `replay`: the region events of a walk whose crossings are known.
@Suite("locationctl replay --region", .serialized)
struct RegionCommandTests {
    static let metresPerDegree = Location.meanEarthRadius * .pi / 180

    /// A walk west to east through (52.5, 13.4) at 1 m/s, a fix a second, from 500 m before to 500 m after,
    /// and back to the centre after a pause outside.
    static func walk(in directory: TemporaryDirectory) throws -> String {
        let start = Date(timeIntervalSince1970: 1_767_261_600)
        let metresPerLongitude = metresPerDegree * cos(52.5 * .pi / 180)
        var fixes = (0...1000).map { second in
            Location(latitude: 52.5, longitude: 13.4 + (Double(second) - 500) / metresPerLongitude, horizontalAccuracy: 5,
                     timestamp: start.addingTimeInterval(Double(second)))
        }
        fixes += (0...500).map { step in
            Location(latitude: 52.5, longitude: 13.4 + (500 - Double(step)) / metresPerLongitude, horizontalAccuracy: 5,
                     timestamp: start.addingTimeInterval(1100 + Double(step)))
        }
        let path = directory.file("through.gpx")
        let writer = try GPXWriter(path: path)
        try writer.write(contentsOf: fixes)
        try writer.finish()
        return path
    }

    @Test("replay --region: JSON region lines after the fix that caused them (enter, dwell, exit, enter, dwell), each at its fix time; text shows them on standard error")
    func regionEventsInTheStream() throws {
        let directory = TemporaryDirectory()
        let track = try Self.walk(in: directory)
        let result = try Tool.run(
            "locationctl", ["replay", track, "--fast", "--format", "json", "--region", "home=52.5,13.4,100,60", "--region", "far=10,10,1000"],
            in: directory)
        #expect(result.status == 0, "\(result.stderr)")
        let objects = try jsonObjects(result.lines)
        let regions = objects.filter { $0["type"] as? String == "region" }
        #expect(regions.map { $0["event"] as? String } == ["enter", "dwell", "exit", "enter", "dwell"], "\(regions)")
        #expect(regions.allSatisfy { $0["region"] as? String == "home" })
        // Each right after the location line of its fix, with that fix's time.
        for (index, object) in objects.enumerated() where object["type"] as? String == "region" {
            let previous = objects[index - 1]
            #expect(previous["type"] as? String == "location" || previous["type"] as? String == "region")
            if previous["type"] as? String == "location" { #expect(previous["timestamp"] as? String == object["timestamp"] as? String) }
        }
        #expect(regions.first?["timestamp"] as? String == "2026-01-01T10:06:40.000Z", "enters 100 m before the centre")

        let text = try Tool.run("locationctl", ["replay", track, "--fast", "--region", "home=52.5,13.4,100"], in: directory)
        #expect(text.status == 0)
        #expect(text.stderr.components(separatedBy: "── region home: enter at").count - 1 == 2, "\(text.stderr)")
        #expect(text.stderr.components(separatedBy: "── region home: exit at").count - 1 == 1)
        #expect(!text.stdout.contains("region"))
    }

    @Test("a malformed --region is exit 64 in one line naming it: no '=', two numbers, nan, a latitude of 91, a radius of -1 or 1e9, a name given twice, an empty name")
    func malformedRegions() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 5)
        let cases: [([String], String)] = [
            (["home"], "no '='"),
            (["home=1,2"], "2 numbers"),
            (["home=nan,2,3"], "not a decimal number"),
            (["home=0x1p3,2,3"], "not a decimal number"),
            (["home=91,2,3"], "latitude"),
            (["home=1,2,-1"], "radius"),
            (["home=1,2,1e9"], "not a decimal number"),
            (["home=1,2,1000000000"], "radius"),
            (["home=1,2,3,-5"], "dwell"),
            (["=1,2,3"], "identifier"),
            (["home=1,2,3", "home=4,5,6"], "given twice"),
        ]
        for (values, message) in cases {
            let result = try Tool.run("locationctl", ["replay", track, "--fast"] + values.flatMap { ["--region", $0] }, timeout: 20, in: directory)
            #expect(result.status == 64, "\(values): \(result.stderr)")
            #expect(result.stderr.contains(message) && result.stderr.split(separator: "\n").count == 1, "\(values): \(result.stderr)")
        }
        let socket = try Tool.run("locationctl", ["watch", "--socket", directory.file("none.sock"), "--region", "home=1,2,3"], timeout: 20, in: directory)
        #expect(socket.status == 64 && socket.stderr.contains("--region"), "\(socket.stderr)")
    }
}
