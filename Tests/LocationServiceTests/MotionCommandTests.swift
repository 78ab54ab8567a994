import Foundation
import GPSDTestSupport
import LocationControl
import LocationCore
import LocationGPX
import LocationTesting
import Testing

/// Stationary detection, the outlier gate and deferred delivery from the command line and through locationd.
@Suite("motion, outliers and deferred delivery through the CLI and the daemon", .serialized)
struct MotionCommandTests {
    /// A GPX file of `fixes`.
    static func gpx(_ fixes: [Location], _ directory: TemporaryDirectory, _ name: String = "track.gpx") throws -> String {
        let path = directory.file(name)
        let writer = try GPXWriter(path: path)
        try writer.write(contentsOf: fixes)
        try writer.finish()
        return path
    }

    static func objects(_ result: ToolResult) throws -> [[String: Any]] { try jsonObjects(result.lines) }

    @Test("replay --motion on: one stationary and one moving line at the stop; between them every fix at the stop, or none with --while-stationary nothing")
    func replayMotion() throws {
        let directory = TemporaryDirectory()
        let track = try Self.gpx(LocationFixtures.walkStopWalk(walk: 120, stop: 600, noise: 5), directory)
        let epoch = LocationFixtures.epoch.timeIntervalSince1970
        for delivery in ["centroid", "nothing"] {
            let result = try Tool.run("locationctl", ["replay", track, "--fast", "--motion", "on", "--while-stationary", delivery, "--format", "json"], in: directory)
            #expect(result.status == 0, "\(result.stderr)")
            let objects = try Self.objects(result)
            let motions = objects.filter { $0["type"] as? String == "motion" }
            #expect(motions.map { $0["state"] as? String } == ["stationary", "moving"], "\(delivery)")
            guard motions.count == 2, let stop = motions[0]["time"] as? Double, let go = motions[1]["time"] as? Double else { continue }
            #expect((120...185).contains(stop - epoch) && (720...735).contains(go - epoch), "\(stop - epoch) \(go - epoch)")
            let still = objects.filter {
                $0["type"] as? String == "location" && ($0["time"] as? Double ?? 0) > stop && ($0["time"] as? Double ?? 0) < go
            }
            if delivery == "nothing" {
                #expect(still.isEmpty, "\(still.count) fixes while still")
            } else {
                let latitude = motions[0]["latitude"] as? Double ?? 0, longitude = motions[0]["longitude"] as? Double ?? 0
                let spread = still.map {
                    Location.distance(fromLatitude: latitude, longitude: longitude, toLatitude: $0["latitude"] as? Double ?? 0, longitude: $0["longitude"] as? Double ?? 0)
                }
                #expect(still.count > 500 && spread.allSatisfy { $0 < 3 }, "\(still.count) fixes, up to \(spread.max() ?? 0) m from the stop")
            }
        }
    }

    @Test("replay --max-speed: a 5 km jump is one outlier-rejected line and never a location; 0, nan and -1 are exit 64")
    func replayOutlier() throws {
        let directory = TemporaryDirectory()
        var fixes = LocationFixtures.walk(count: 60)
        fixes[30].latitude += 0.045
        let track = try Self.gpx(fixes, directory)
        let result = try Tool.run("locationctl", ["replay", track, "--fast", "--max-speed", "100", "--format", "json"], in: directory)
        #expect(result.status == 0, "\(result.stderr)")
        let objects = try Self.objects(result)
        #expect(objects.filter { $0["type"] as? String == "location" }.count == 59)
        #expect(objects.filter { $0["code"] as? String == "outlier-rejected" }.count == 1)
        for bad in ["0", "nan", "-1", "inf", "fast"] {
            let refused = try Tool.run("locationctl", ["replay", track, "--fast", "--max-speed", bad], in: directory)
            #expect(refused.status == 64 && refused.stderr.split(separator: "\n").count == 1 && refused.stderr.contains("--max-speed"), "\(bad): \(refused.stderr)")
        }
    }

    @Test("replay --max-update-delay 10: every fix once, in deferred batches of at most 11, oldest first")
    func replayDeferred() throws {
        let directory = TemporaryDirectory()
        let track = try Self.gpx(LocationFixtures.walk(count: 95), directory)
        let result = try Tool.run("locationctl", ["replay", track, "--fast", "--max-update-delay", "10", "--format", "json"], in: directory)
        #expect(result.status == 0, "\(result.stderr)")
        let objects = try Self.objects(result)
        #expect(!objects.contains { $0["type"] as? String == "location" }, "no fix live")
        let batches = objects.filter { $0["type"] as? String == "batch" }
        #expect(batches.allSatisfy { $0["reason"] as? String == "deferred" && ($0["count"] as? Int ?? 99) <= 11 })
        let times = batches.flatMap { ($0["locations"] as? [[String: Any]] ?? []).compactMap { $0["time"] as? Double } }
        #expect(times == LocationFixtures.walk(count: 95).map { $0.timestamp.timeIntervalSince1970 })
    }

    @Test("locationd --motion on: watchers get the motion lines, and Home Assistant's attributes say stationary, then moving", .timeLimit(.minutes(2)))
    func daemonMotionReachesHomeAssistant() throws {
        let directory = TemporaryDirectory()
        let broker = try MosquittoBroker(directory: directory.file("broker"))
        try broker.start()
        let subscriber = try MosquittoSubscriber(broker: broker, topic: "locationd/#", id: "home-assistant")
        let track = try Self.gpx(LocationFixtures.walkStopWalk(walk: 120, stop: 300, noise: 5), directory)
        let daemon = try RunningDaemon(
            directory: directory, source: ["--replay", track, "--speed", "50"],
            extra: ["--motion", "on", "--uplink", "mqtt://127.0.0.1:\(broker.port)/pi?format=homeassistant"])
        let out = directory.file("watch.jsonl")
        let (watch, _, _) = try Tool.start("locationctl", ["watch", "--format", "json", "--output", out, "--socket", daemon.socket], in: directory)
        defer { watch.terminate() }
        func motions() -> [String] {
            let lines = ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
            return ((try? jsonObjects(lines)) ?? []).filter { $0["type"] as? String == "motion" }.compactMap { $0["state"] as? String }
        }
        #expect(eventually(60) { motions() == ["stationary", "moving"] }, "\(motions())")
        let attributes = subscriber.messages.filter { $0.topic == "locationd/pi/attributes" }.compactMap { $0.payload["motion"] as? String }
        var changes: [String] = []
        for state in attributes where state != changes.last { changes.append(state) }
        #expect(eventually(10) {
            let now = subscriber.messages.filter { $0.topic == "locationd/pi/attributes" }.compactMap { $0.payload["motion"] as? String }
            var seen: [String] = []
            for state in now where state != seen.last { seen.append(state) }
            return seen == ["stationary", "moving"]
        }, "\(changes)")
    }

    @Test("a region named None with a Home Assistant uplink is exit 64 (None is its no-zone); a name with U+202E or U+2028 is quoted escaped, never raw")
    func regionNamesThatCannotBeShown() throws {
        let directory = TemporaryDirectory()
        let track = try Self.gpx(LocationFixtures.walk(count: 5), directory)
        let none = try Tool.run(
            "locationd",
            ["--replay", track, "--socket", directory.file("run/control.sock"), "--region", "None=52.52,13.405,100", "--uplink", "mqtt://127.0.0.1:9/pi?format=homeassistant"],
            timeout: 30, in: directory)
        #expect(none.status == 64 && none.stderr.contains("region named None"), "\(none.status): \(none.stderr)")
        for hidden in ["\u{202E}", "\u{2028}"] {
            let result = try Tool.run("locationctl", ["replay", track, "--fast", "--region", "h\(hidden)x=0,0,10"], in: directory)
            #expect(result.status == 64, "\(result.stderr)")
            #expect(!result.stderr.unicodeScalars.contains { $0 == hidden.unicodeScalars.first! }, "raw in: \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1)
        }
    }
}
