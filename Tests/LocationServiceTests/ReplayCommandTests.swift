import Foundation
import LocationCore
import LocationGPX
import LocationTesting
import Testing

@Suite("locationctl replay, end to end")
struct ReplayCommandTests {
    @Test("jsonl: one object per line, every location of the track, in order")
    func jsonl() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 300)
        let result = try Tool.run("locationctl", ["replay", track, "--fast", "--format", "json"], in: directory)
        #expect(result.status == 0, "\(result.stderr)")
        let objects = try jsonObjects(result.lines)
        let locations = objects.filter { $0["type"] as? String == "location" }
        #expect(locations.count == 300)
        let times = locations.compactMap { $0["timestamp"] as? String }
        #expect(times == LocationFixtures.walk(count: 300).map { RFC3339.string(from: $0.timestamp, fractionDigits: 3) })
        let seconds = locations.compactMap { $0["time"] as? Double }
        #expect(seconds == LocationFixtures.walk(count: 300).map(\.timestamp.timeIntervalSince1970), "the exact fix time as a number")
        #expect(locations.allSatisfy { $0["isSimulated"] as? Bool == true && $0["source"] as? String == "walk.gpx" })
        #expect(result.stderr.isEmpty, "no progress display when output is piped: \(result.stderr)")
    }

    @Test("--distance-filter delivers a foreground fix only once it is that many metres from the last one delivered")
    func distanceFilterThinsForegroundFixes() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 60)
        let all = try Tool.run("locationctl", ["replay", track, "--fast", "--format", "json"], in: directory)
        let thinned = try Tool.run("locationctl", ["replay", track, "--fast", "--format", "json", "--distance-filter", "10"], in: directory)
        #expect(all.status == 0 && thinned.status == 0, "\(thinned.stderr)")
        let locations = try jsonObjects(thinned.lines).filter { $0["type"] as? String == "location" }
        let coordinates = locations.compactMap { object -> Location? in
            guard let latitude = object["latitude"] as? Double, let longitude = object["longitude"] as? Double else { return nil }
            return Location(latitude: latitude, longitude: longitude, timestamp: Date())
        }
        #expect(try jsonObjects(all.lines).filter { $0["type"] as? String == "location" }.count == 60)
        #expect(coordinates.count > 1 && coordinates.count < 20, "\(coordinates.count) of 60 fixes delivered")
        for (previous, next) in zip(coordinates, coordinates.dropFirst()) {
            #expect(next.distance(from: previous) >= 10, "\(next.distance(from: previous)) m apart")
        }
    }

    @Test("text: one aligned line per location, with units")
    func text() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 5)
        let result = try Tool.run("locationctl", ["replay", track, "--fast"], in: directory)
        #expect(result.status == 0)
        let locationLines = result.lines.filter { $0.hasPrefix("2024-") }
        #expect(locationLines.count == 5)
        #expect(locationLines[0].hasPrefix("2024-05-01 06:00:00.0Z "), "another day's fix has its date: \(locationLines[0])")
        #expect(locationLines[0].contains(" 52.520008   13.404954 "), "signed degrees, as maps take them")
        #expect(locationLines[0].contains("m/s "))
        #expect(locationLines[0].contains("±4.5m"))
        #expect(Set(locationLines.map { $0.count }).count == 1, "lines are aligned")
    }

    @Test("gpx: a valid GPX file that reads back to the same fixes")
    func gpxOutput() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 50)
        let output = directory.file("out.gpx")
        let result = try Tool.run("locationctl", ["replay", track, "--fast", "--format", "gpx", "--output", output], in: directory)
        #expect(result.status == 0, "\(result.stderr)")
        let read = try GPXReader.readLocations(contentsOf: output)
        #expect(read.count == 50)
        #expect(read.map(\.timestamp) == LocationFixtures.walk(count: 50).map(\.timestamp))
    }

    @Test("without the background location mode a lifecycle script holds every fix from the background on and flushes them as one batch, deterministically")
    func lifecycleScript() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 600)
        let arguments = [
            "replay", track, "--fast", "--format", "json", "--reduced-interval", "30", "--reduced-accuracy", "10",
            "--lifecycle", "60s:background,120s:suspended,300s:active",
        ]
        let first = try Tool.run("locationctl", arguments, in: directory)
        let second = try Tool.run("locationctl", arguments, in: directory)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout == second.stdout, "--fast replays are deterministic")
        let objects = try jsonObjects(first.lines)
        let states = objects.filter { $0["type"] as? String == "state" }.compactMap { $0["state"] as? String }
        #expect(states == ["inactive", "active", "inactive", "background", "suspended", "inactive", "active"])
        let batchIndex = try #require(objects.firstIndex { $0["type"] as? String == "batch" })
        let count = try #require(objects[batchIndex]["count"] as? Int)
        #expect(objects[batchIndex]["reason"] as? String == "foreground")
        // The state line that flushed the batch comes just before it.
        #expect(objects[batchIndex - 1]["state"] as? String == "inactive")
        // The batch is one line, its fixes inside it.
        let batch = try #require(objects[batchIndex]["locations"] as? [[String: Any]])
        #expect(batch.count == count)
        let seconds = batch.compactMap { ($0["timestamp"] as? String).flatMap(RFC3339.parse)?.date.timeIntervalSince(LocationFixtures.epoch) }
        // Held from 60 s, the fix that met didEnterBackground, then one acquisition every 30 s of track time
        // (the first at once, at 61 s) until the return to the foreground at 301 s.
        #expect(seconds == [60, 61, 91, 121, 151, 181, 211, 241, 271])
        // Nothing reached the app between didEnterBackground and the batch: only the 60 foreground fixes.
        let live = objects.prefix(batchIndex).filter { $0["type"] as? String == "location" }
        #expect(live.count == 60)
        // The lifecycle moves at the first delivered fix at or after each script time: while duty-cycled
        // that is 301 s; from there every epoch is delivered again.
        let after = objects[(batchIndex + 1)...].filter { $0["type"] as? String == "location" }
        #expect(after.count == 299)
        #expect(after.first?["timestamp"] as? String == "2024-05-01T06:05:01.000Z")
    }

    @Test("with --background-location on, background and suspended fixes arrive live at the reduced rate and nothing is held")
    func lifecycleScriptWithBackgroundLocation() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 600)
        let result = try Tool.run(
            "locationctl",
            [
                "replay", track, "--fast", "--format", "json", "--reduced-interval", "30", "--reduced-accuracy", "10",
                "--background-location", "on", "--lifecycle", "60s:background,120s:suspended,300s:active",
            ], in: directory)
        #expect(result.status == 0, "\(result.stderr)")
        let objects = try jsonObjects(result.lines)
        #expect(!objects.contains { $0["type"] as? String == "batch" })
        let states = objects.filter { $0["type"] as? String == "state" }.compactMap { $0["state"] as? String }
        #expect(states == ["inactive", "active", "inactive", "background", "suspended", "inactive", "active"])
        let background = objects.drop { $0["state"] as? String != "background" }.prefix { $0["state"] as? String != "inactive" }
        let seconds = background.filter { $0["type"] as? String == "location" }
            .compactMap { ($0["timestamp"] as? String).flatMap(RFC3339.parse)?.date.timeIntervalSince(LocationFixtures.epoch) }
        #expect(seconds == [60, 61, 91, 121, 151, 181, 211, 241, 271])
        #expect(objects.filter { $0["type"] as? String == "location" }.count == 60 + 9 + 299)
    }

    @Test("a replay that runs in the background with the background location mode stays in the background, at the start and at the end, with its fixes live")
    func backgroundWithModeStaysInTheBackground() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 200)
        let result = try Tool.run(
            "locationctl",
            ["replay", track, "--fast", "--format", "jsonl", "--policy", "reduced", "--background-location", "on",
             "--reduced-interval", "20"],
            in: directory)
        #expect(result.status == 0, "\(result.stderr)")
        let objects = try jsonObjects(result.lines)
        let states = objects.filter { $0["type"] as? String == "state" }.compactMap { $0["state"] as? String }
        #expect(states == ["inactive", "background"])
        #expect(!objects.contains { $0["type"] as? String == "batch" })
        #expect(objects.filter { $0["type"] as? String == "location" }.count == 10)
    }

    @Test("fixes still held at the end of the track are delivered, not lost")
    func heldAtEnd() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 200)
        let result = try Tool.run(
            "locationctl",
            ["replay", track, "--fast", "--format", "json", "--reduced-interval", "20", "--lifecycle", "100s:suspended"],
            in: directory)
        #expect(result.status == 0, "\(result.stderr)")
        let objects = try jsonObjects(result.lines)
        let batchIndex = try #require(objects.firstIndex { $0["type"] as? String == "batch" })
        // Held: the fix at 100 s that met the suspension, then one per 20 s from 101 s to 181 s.
        #expect(objects[batchIndex]["count"] as? Int == 6)
        // The batch's fixes are in its line, oldest first.
        let held = try #require(objects[batchIndex]["locations"] as? [[String: Any]])
        #expect(held.count == 6)
        let seconds = held.compactMap { ($0["timestamp"] as? String).flatMap(RFC3339.parse)?.date.timeIntervalSince(LocationFixtures.epoch) }
        #expect(seconds == [100, 101, 121, 141, 161, 181])
        let after = objects[(batchIndex + 1)...]
        #expect(!after.contains { $0["type"] as? String == "location" }, "the held fixes are the last: \(after)")
    }

    @Test(
        "exit codes follow sysexits and errors are one clear line",
        arguments: [
            (["replay", "/nonexistent/track.gpx"], Int32(66), "/nonexistent/track.gpx: no such file"),
            (["replay", "TRACK", "--speed", "2", "--fast"], 64, "use either --speed or --fast, not both (see 'locationctl --help')"),
            (["replay", "TRACK", "--lifecycle", "soon:background"], 64,
             "lifecycle script entry 1 time: 'soon' is not a time; use a number with s, m, h or ms, such as 90s or 2m"),
            (["replay", "TRACK", "--speed", "0"], 64, "--speed: 0 is zero; use 0.001…1000000 × (see 'locationctl --help')"),
            (["replay", "TRACK", "--speed", "-1"], 64, "--speed: -1 is negative; use 0.001…1000000 × (see 'locationctl --help')"),
            (["replay", "TRACK", "--speed", "1e-20"], 64,
             "--speed: 1e-20 is below the smallest allowed value; use 0.001…1000000 × (see 'locationctl --help')"),
            (["replay", "TRACK", "--reduced-interval", "0"], 64, "--reduced-interval: 0 is zero; use 0.1…604800 s"),
            (["replay", "TRACK", "--reduced-interval", "1.8e20"], 64,
             "--reduced-interval: 1.8e20 is above the largest allowed value; use 0.1…604800 s"),
            (["replay", "TRACK", "--max-gap", "1e300"], 64,
             "--max-gap: 1e300 is above the largest allowed value; use 0…1000000000000 s (see 'locationctl --help')"),
            (["replay", "TRACK", "--untimed-speed", "1e-300"], 64,
             "--untimed-speed: 1e-300 is below the smallest allowed value; use 0.001…1000000 m/s (see 'locationctl --help')"),
            (["replay", "TRACK", "--lifecycle", "99999999999999s:background"], 64,
             "lifecycle script entry 1 time: 99999999999999s is above the largest allowed value; use 0…1000000000000 s"),
            (["replay", "BROKEN", "--fast"], 65, "BROKEN:1:97: the file ends inside <trkseg> (truncated?)"),
            (["replay", "TRACK", "--config", "/nonexistent/locationd.yaml"], 66, "configuration file /nonexistent/locationd.yaml does not exist"),
            (["frobnicate"], 64, "Unexpected argument 'frobnicate' (see 'locationctl --help')"),
        ])
    func exitCodes(arguments: [String], status: Int32, message: String) throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 3)
        let broken = directory.file("broken.gpx")
        try Data("<gpx version=\"1.1\"><trk><trkseg><trkpt lat=\"1\" lon=\"2\"><time>2024-01-01T00:00:00Z</time></trkpt>".utf8)
            .write(to: URL(fileURLWithPath: broken))
        let resolved = arguments.map { $0 == "TRACK" ? track : $0 == "BROKEN" ? broken : $0 }
        let result = try Tool.run("locationctl", resolved, in: directory)
        #expect(result.status == status, "\(result.stderr)")
        // In text the replay's own lines (state changes, the source's error) come first on standard error;
        // the failure is the one line naming the program, and the last.
        let failure = "locationctl: \(message.replacingOccurrences(of: "BROKEN", with: broken))\n"
        #expect(result.stderr.hasSuffix(failure), "\(result.stderr)")
        #expect(result.stderr.components(separatedBy: "locationctl:").count == 2, "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").dropLast().allSatisfy { $0.hasPrefix("── ") || $0.hasPrefix("!! ") }, "\(result.stderr)")
    }

    @Test("Ctrl-C during a real-time replay ends with a complete GPX file and exit 130")
    func interruptKeepsGPXValid() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 3600)
        let output = directory.file("partial.gpx")
        let (process, _, _) = try Tool.start(
            "locationctl", ["replay", track, "--speed", "20", "--format", "gpx", "--output", output], in: directory)
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, ((try? FileManager.default.attributesOfItem(atPath: output)[.size] as? Int) ?? 0) < 4000 {
            usleep(20_000)
        }
        kill(process.processIdentifier, SIGINT)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 130, "interrupted, not finished")
        let read = try GPXReader.readLocations(contentsOf: output)
        #expect(read.count > 0 && read.count < 3600)
    }

    @Test(
        "every real GPX file in the shared test data replays",
        .enabled(if: sharedGPXData != nil, "real GPX files not found: set GPX_TESTDATA or put ../shared/testdata/gpx beside the checkout"),
        arguments: [
        "gpxpy__gpx1.1_with_all_fields.gpx", "gpxpy__track_with_speed.gpx", "gpsbabel__mtk_logger_m241_multiple_tracks.gpx",
        "gpxpy__route.gpx", "gpxpy__cerknicko-without-times.gpx", "gpsbabel__expertgps.gpx",
    ])
    func realFiles(name: String) throws {
        let data = try #require(sharedGPXData)
        let directory = TemporaryDirectory()
        let result = try Tool.run("locationctl", ["replay", data + "/" + name, "--fast", "--format", "json"], in: directory)
        #expect(result.status == 0, "\(result.stderr)")
        let locations = try jsonObjects(result.lines).filter { $0["type"] as? String == "location" }
        #expect(!locations.isEmpty)
    }
}
