import Foundation
import GPSDTestSupport
import LocationCore
import LocationGPX
import LocationTesting
import Testing

/// What a logger that runs for months needs of `watch` and `replay`: `--append`, `--split-gap`, `--min-move`.
@Suite("a logger's output: append, split gaps, minimum moves", .serialized)
struct LoggerOutputTests {
    /// The number of `<trk>` and `<trkseg>` elements of a GPX file.
    static func structure(_ path: String) throws -> (tracks: Int, segments: Int) {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        return (text.components(separatedBy: "<trk>").count - 1, text.components(separatedBy: "<trkseg>").count - 1)
    }

    @Test("--append continues a GPX document with a new track and JSON lines after what the file holds")
    func appendContinues() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 50)
        let gpx = directory.file("log.gpx")
        let json = directory.file("log.jsonl")
        for round in 1...3 {
            let first = round == 1 ? [] : ["--append"]
            let a = try Tool.run("locationctl", ["replay", track, "--fast", "--format", "gpx", "--output", gpx] + first, in: directory)
            #expect(a.status == 0, "\(a.stderr)")
            let b = try Tool.run("locationctl", ["replay", track, "--fast", "--format", "json", "--output", json] + first, in: directory)
            #expect(b.status == 0, "\(b.stderr)")
        }
        let points = try GPXReader.readLocations(contentsOf: gpx, kinds: [.trackPoint])
        #expect(points.count == 150)
        #expect(try Self.structure(gpx) == (3, 3))
        let text = try String(contentsOfFile: gpx, encoding: .utf8)
        #expect(text.components(separatedBy: "<?xml").count == 2 && text.components(separatedBy: "</gpx>").count == 2)
        let lines = try String(contentsOfFile: json, encoding: .utf8).split(separator: "\n")
        #expect(lines.filter { $0.contains(#""type":"location""#) }.count == 150)
        var info = stat()
        #expect(stat(gpx, &info) == 0 && info.st_mode & 0o777 == 0o600)
    }

    @Test("--append to an empty file starts a document; to a file that is not a whole GPX document it is exit 65 and the file is untouched")
    func appendRefusesWhatItCannotContinue() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 5)
        let empty = directory.file("empty.gpx")
        _ = FileManager.default.createFile(atPath: empty, contents: Data())
        let started = try Tool.run("locationctl", ["replay", track, "--fast", "--format", "gpx", "--output", empty, "--append"], in: directory)
        #expect(started.status == 0)
        #expect(try GPXReader.readLocations(contentsOf: empty, kinds: [.trackPoint]).count == 5)

        let full = try String(contentsOfFile: empty, encoding: .utf8)
        let header = #"<?xml version="1.0"?><gpx version="1.1" creator="x" xmlns="http://www.topografix.com/GPX/1/1">"#
        let cases = [
            ("notes.txt", "hello\n"),
            ("junk.gpx", "hello</gpx>\n"),
            // A route cut short: no track point to continue after.
            ("route.gpx", header + #"<rte><rtept lat="1" lon="2"></rtept><rtept lat="1""#),
            // Cut far after its last point: more than a write a full disk cuts.
            ("waypoints.gpx", header + #"<trk><trkseg><trkpt lat="1" lon="2"></trkpt></trkseg></trk>"#
                + String(repeating: #"<wpt lat="1" lon="2"><name>a</name></wpt>"#, count: 300)),
        ]
        for (name, content) in cases {
            let path = directory.file(name)
            try content.write(toFile: path, atomically: false, encoding: .utf8)
            let result = try Tool.run("locationctl", ["replay", track, "--fast", "--format", "gpx", "--output", path, "--append"], in: directory)
            #expect(result.status == 65, "\(name): \(result.stderr)")
            #expect(result.stderr.contains("does not end with </gpx>") && result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
            #expect(try String(contentsOfFile: path, encoding: .utf8) == content, "\(name) was changed")
        }
        // After </gpx>: whitespace (more than 64 KiB of it), a comment; inside it, spaces. What follows it is replaced.
        let endings = [
            ("spaced.gpx", full + "\n" + String(repeating: " \n", count: 40_000)),
            ("comment.gpx", full + "<!-- written by hand -->\n<!-- twice -->\n"),
            ("tag.gpx", String(full.dropLast(7)) + "</gpx  >\n"),
        ]
        for (name, content) in endings {
            let path = directory.file(name)
            try content.write(toFile: path, atomically: false, encoding: .utf8)
            let result = try Tool.run("locationctl", ["replay", track, "--fast", "--format", "gpx", "--output", path, "--append"], in: directory)
            #expect(result.status == 0, "\(name): \(result.stderr)")
            #expect(try GPXReader.readLocations(contentsOf: path, kinds: [.trackPoint]).count == 10, "\(name)")
        }
    }

    @Test("a GPX file cut inside a point (a full disk, a crash) is continued after its last whole point: the broken rest is dropped, its track closed, and --append says so")
    func appendRepairsACutPoint() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 20)
        let source = directory.file("whole.gpx")
        let made = try Tool.run("locationctl", ["replay", track, "--fast", "--format", "gpx", "--output", source], in: directory)
        #expect(made.status == 0, "\(made.stderr)")
        let full = Array(try String(contentsOfFile: source, encoding: .utf8).utf8)
        // The start of the 15th point, and 40 bytes into it.
        var starts: [Int] = []
        let needle = Array("<trkpt".utf8)
        for index in 0..<(full.count - needle.count) where full[index..<(index + needle.count)].elementsEqual(needle) { starts.append(index) }
        try #require(starts.count == 20)
        let cuts = [("mid-point.gpx", starts[14] + 40, 14), ("mid-closing.gpx", full.count - 10, 20), ("in-gpx-tag.gpx", full.count - 2, 20)]
        for (name, length, whole) in cuts {
            let path = directory.file(name)
            #expect(FileManager.default.createFile(atPath: path, contents: Data(full.prefix(length))))
            let result = try Tool.run("locationctl", ["replay", track, "--fast", "--format", "gpx", "--output", path, "--append"], in: directory)
            #expect(result.status == 0, "\(name): \(result.stderr)")
            #expect(result.stderr.contains("ended inside a track point") && result.stderr.contains("dropped"), "\(name): \(result.stderr)")
            let points = try GPXReader.readLocations(contentsOf: path, kinds: [.trackPoint])
            #expect(points.count == whole + 20, "\(name): \(points.count) points")
            #expect(try Self.structure(path).tracks == 2)
        }
    }

    @Test("--append adds a track to another program's GPX whose root does not declare our extension namespace: the track declares it, and the document reads back")
    func appendToForeignDocument() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 5)
        let path = directory.file("foreign.gpx")
        let foreign = #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n"
            + #"<gpx version="1.1" creator="other" xmlns="http://www.topografix.com/GPX/1/1"><trk><trkseg><trkpt lat="1" lon="2"><time>2025-01-01T00:00:00Z</time></trkpt></trkseg></trk></gpx>"#
            + "\n"
        try foreign.write(toFile: path, atomically: false, encoding: .utf8)
        // Twice: the second append must not take the first one's declaration on its track for the root's.
        for round in 1...2 {
            let result = try Tool.run("locationctl", ["replay", track, "--fast", "--format", "gpx", "--output", path, "--append"], in: directory)
            #expect(result.status == 0, "\(result.stderr)")
            let text = try String(contentsOfFile: path, encoding: .utf8)
            #expect(text.contains("<loc:"), "the walk's points carry extension values")
            #expect(text.components(separatedBy: "<trk xmlns:loc=").count - 1 == round, "each added track declares it")
            let points = try GPXReader.readLocations(contentsOf: path, kinds: [.trackPoint])
            #expect(points.count == 1 + 5 * round)
            #expect(points.last?.speed != nil, "the extension values read back")
        }
    }

    @Test("a GPX file is a whole document from the start: a logger killed before its first fix leaves an empty document, not an empty file")
    func wholeFromTheStart() throws {
        let directory = TemporaryDirectory()
        // A logger before its first fix: gpsd that sends nothing (a listening socket that never answers).
        let silent = try LoopbackTCP.listen()
        defer { close(silent.fd) }
        let early = directory.file("early.gpx")
        let (process, _, _) = try Tool.start("locationctl", ["watch", "--gpsd", "127.0.0.1:\(silent.port)", "--format", "gpx", "--output", early], in: directory)
        #expect(eventually(20) { ((try? Data(contentsOf: URL(fileURLWithPath: early))) ?? Data()).count > 0 })
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(try GPXReader.readLocations(contentsOf: early, kinds: [.trackPoint]).isEmpty)
        #expect(try String(contentsOfFile: early, encoding: .utf8).hasSuffix("</gpx>\n"))
    }

    @Test(
        "a GPX file is a whole document after a full disk: at the file size limit exit 74 with every point that fit, and --append goes on from there",
        .sanitizerExclusion("LocationServiceTests.LoggerOutputTests/wholeAfterAFullDisk()"))
    func wholeAfterAFullDisk() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 400)
        // A file size limit stands for a full disk: the write that passes it fails (EFBIG).
        let full = directory.file("full.gpx")
        for fast in [true, false] {
            let limited = try Tool.run(
                "/usr/bin/prlimit", ["--fsize=20000:unlimited", Tool.path("locationctl"), "replay", track, "--format", "gpx", "--output", full] + (fast ? ["--fast"] : ["--speed", "1000000"]),
                timeout: 60, in: directory)
            #expect(limited.status == 74, "\(limited.stderr)")
            #expect(limited.stderr.contains(full), "\(limited.stderr)")
            let kept = try GPXReader.readLocations(contentsOf: full, kinds: [.trackPoint])
            #expect(kept.count > 10 && kept.count < 400, "fast \(fast): \(kept.count) points")
            let more = try Tool.run("locationctl", ["replay", track, "--fast", "--format", "gpx", "--output", full, "--append"], in: directory)
            #expect(more.status == 0 && !more.stderr.contains("ended inside"), "\(more.stderr)")
            #expect(try GPXReader.readLocations(contentsOf: full, kinds: [.trackPoint]).count == kept.count + 400)
        }
    }

    @Test("every output to a regular file is locked: a plain --output to a file a logger writes exits 73 and leaves it untouched; JSON --append after a line cut short starts a new line")
    func plainOutputRespectsTheLock() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 5)
        let path = directory.file("log.jsonl")
        try "{\"type\":\"location\",\"latitude\":1,\"longit".write(toFile: path, atomically: false, encoding: .utf8)
        let appended = try Tool.run("locationctl", ["replay", track, "--fast", "--format", "json", "--output", path, "--append"], in: directory)
        #expect(appended.status == 0, "\(appended.stderr)")
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        #expect(lines.first == "{\"type\":\"location\",\"latitude\":1,\"longit")
        #expect(lines.dropFirst().allSatisfy { $0.hasPrefix("{") && $0.hasSuffix("}") }, "\(lines)")
        #expect(lines.filter { $0.contains(#""type":"location""#) }.count == 6)

        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let holder = open(path, O_RDONLY)
        defer { close(holder) }
        #expect(flock(holder, LOCK_EX | LOCK_NB) == 0)
        for extra in [[], ["--append"]] {
            let result = try Tool.run("locationctl", ["replay", track, "--fast", "--format", "json", "--output", path] + extra, in: directory)
            #expect(result.status == 73, "\(extra): \(result.stderr)")
            #expect(result.stderr.contains("another program is writing it") && result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test("--append without a file, GPX --append to a FIFO, --split-gap 0, --min-move -1 or nan: exit 64, one line each")
    func badLoggerArguments() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 5)
        let fifo = directory.file("pipe")
        #expect(mkfifo(fifo, 0o600) == 0)
        // A reader on the FIFO (opened without waiting for a writer), so that opening it for writing does not wait.
        let reader = open(fifo, O_RDONLY | O_NONBLOCK)
        defer { close(reader) }
        let cases: [[String]] = [
            ["--format", "json", "--append"],
            ["--format", "gpx", "--output", fifo, "--append"],
            ["--format", "gpx", "--split-gap", "0"],
            ["--format", "gpx", "--split-gap", "nan"],
            ["--format", "json", "--min-move", "-1"],
            ["--format", "json", "--min-move", "inf"],
        ]
        for arguments in cases {
            let result = try Tool.run("locationctl", ["replay", track, "--fast"] + arguments, timeout: 20, in: directory)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(arguments): \(result.stderr)")
        }
    }

    @Test("--split-gap starts a new segment after a gap in fix time; --min-move drops fixes closer than that to the last written")
    func splitGapAndMinimumMove() throws {
        let directory = TemporaryDirectory()
        // Ten fixes a second apart, a 5-minute gap, ten more.
        var fixes = LocationFixtures.walk(count: 10)
        fixes += LocationFixtures.walk(count: 10, from: 310)
        let track = directory.file("gap.gpx")
        let writer = try GPXWriter(path: track)
        try writer.write(contentsOf: fixes)
        try writer.finish()
        let output = directory.file("out.gpx")
        let split = try Tool.run(
            "locationctl", ["replay", track, "--fast", "--max-gap", "1000", "--format", "gpx", "--output", output, "--split-gap", "60"], in: directory)
        #expect(split.status == 0, "\(split.stderr)")
        #expect(try Self.structure(output) == (1, 2))
        #expect(try GPXReader.readLocations(contentsOf: output, kinds: [.trackPoint]).count == 20)

        // The walk moves about 1.4 m a fix: at least 5 m keeps about every fourth.
        let moved = try Tool.run("locationctl", ["replay", track, "--fast", "--format", "json", "--min-move", "5"], in: directory)
        #expect(moved.status == 0, "\(moved.stderr)")
        let kept = try jsonObjects(moved.lines).filter { $0["type"] as? String == "location" }.compactMap { object -> Location? in
            guard let latitude = object["latitude"] as? Double, let longitude = object["longitude"] as? Double else { return nil }
            return Location(latitude: latitude, longitude: longitude, timestamp: Date())
        }
        #expect(kept.count >= 3 && kept.count < 12, "\(kept.count) kept")
        for (previous, next) in zip(kept, kept.dropFirst()) { #expect(next.distance(from: previous) >= 5) }
    }

    @Test("a GPX logger killed with -9 and started again with --append leaves one valid document holding both runs")
    func killedAndRestarted() throws {
        let directory = TemporaryDirectory()
        let daemon = try RunningDaemon(directory: directory)
        let output = directory.file("log.gpx")
        var total = 0
        for _ in 1...2 {
            let (process, _, err) = try Tool.start(
                "locationctl", ["watch", "--socket", daemon.socket, "--format", "gpx", "--output", output, "--append"], in: directory)
            var points = 0
            let deadline = Date().addingTimeInterval(30)
            while points < total + 5, Date() < deadline, process.isRunning {
                usleep(50_000)
                points = ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").components(separatedBy: "</trkpt>").count - 1
            }
            #expect(process.isRunning, "\((try? String(contentsOfFile: err, encoding: .utf8)) ?? "")")
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            let after = try GPXReader.readLocations(contentsOf: output, kinds: [.trackPoint])
            #expect(after.count >= total + 5, "every point written is in a valid document")
            total = after.count
        }
        #expect(try Self.structure(output).tracks == 2)
    }

    @Test("two loggers appending to one file: the second exits 73 saying another program is writing it")
    func oneWriterAtATime() throws {
        let directory = TemporaryDirectory()
        let daemon = try RunningDaemon(directory: directory)
        let output = directory.file("log.jsonl")
        let (first, _, _) = try Tool.start(
            "locationctl", ["watch", "--socket", daemon.socket, "--format", "json", "--output", output, "--append"], in: directory)
        defer {
            first.terminate()
            first.waitUntilExit()
        }
        #expect(eventually { ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").contains(#""type":"location""#) })
        let second = try Tool.run(
            "locationctl", ["watch", "--socket", daemon.socket, "--format", "json", "--output", output, "--append", "--count", "1"],
            timeout: 20, in: directory)
        #expect(second.status == 73, "\(second.stderr)")
        #expect(second.stderr.contains("another program is writing it"), "\(second.stderr)")
        #expect(first.isRunning)
    }
}
