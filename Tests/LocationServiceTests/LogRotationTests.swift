import Foundation
import LocationCore
import LocationGPX
import LocationService
import LocationTesting
import Testing

/// `--rotate daily|hourly|SIZE`, `--keep`, `--gzip`: a logger that runs for months.
@Suite("a logger's rotating files", .serialized)
struct LogRotationTests {
    /// A track of 30 hours from 2026-01-01 22:00 UTC, a fix every 10 minutes (181 fixes over three days).
    static func days(in directory: TemporaryDirectory) throws -> (path: String, fixes: [Location]) {
        let start = Date(timeIntervalSince1970: 1_767_304_800)  // 2026-01-01T22:00:00Z
        let fixes = (0...180).map { index in
            Location(latitude: 52.5 + Double(index) * 0.0001, longitude: 13.4, timestamp: start.addingTimeInterval(Double(index) * 600))
        }
        let path = directory.file("days.gpx")
        let writer = try GPXWriter(path: path)
        try writer.write(contentsOf: fixes)
        try writer.finish()
        return (path, fixes)
    }

    /// The UTC day of a date, `YYYY-MM-DD`.
    static func day(_ date: Date) -> String { String(RFC3339.string(from: date, fractionDigits: 0).prefix(10)) }

    @Test("--rotate daily writes one valid GPX document per UTC day of the fix time, each holding that day's fixes; --gzip compresses the closed ones")
    func daily() throws {
        let directory = TemporaryDirectory()
        let (track, fixes) = try Self.days(in: directory)
        let pattern = directory.file("log-%F.gpx")
        let result = try Tool.run(
            "locationctl", ["replay", track, "--fast", "--format", "gpx", "--output", pattern, "--rotate", "daily", "--gzip"], in: directory)
        #expect(result.status == 0, "\(result.stderr)")
        let days = ["2026-01-01", "2026-01-02", "2026-01-03"]
        // The first two days are compressed in the background once the log has moved on.
        #expect(eventually(20) { days.dropLast().allSatisfy { FileManager.default.fileExists(atPath: directory.file("log-\($0).gpx.gz")) } })
        for day in days.dropLast() {
            let unzip = try Tool.run("/bin/gzip", ["-d", directory.file("log-\(day).gpx.gz")], in: directory)
            #expect(unzip.status == 0, "\(unzip.stderr)")
        }
        var total = 0
        for day in days {
            let points = try GPXReader.readLocations(contentsOf: directory.file("log-\(day).gpx"), kinds: [.trackPoint])
            #expect(!points.isEmpty && points.allSatisfy { Self.day($0.timestamp) == day }, "log-\(day).gpx")
            total += points.count
        }
        #expect(total == fixes.count)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("log-") }
        #expect(files.count == 3, "no file of the day the replay ran: \(files)")
    }

    @Test("--gzip compresses the files an earlier run left too: a logger stopped every night compresses yesterday's file")
    func gzipAcrossRuns() throws {
        let directory = TemporaryDirectory()
        let pattern = directory.file("log-%F.gpx")
        for (index, day) in [(0, 0), (1, 86_400)].map({ ($0.0, Double($0.1)) }) {
            let track = directory.file("run\(index).gpx")
            let writer = try GPXWriter(path: track)
            try writer.write(contentsOf: (0..<5).map { Location(latitude: 52.5, longitude: 13.4, timestamp: Date(timeIntervalSince1970: 1_767_261_600 + day + Double($0) * 60)) })
            try writer.finish()
            let result = try Tool.run("locationctl", ["replay", track, "--fast", "--format", "gpx", "--output", pattern, "--rotate", "daily", "--gzip"], in: directory)
            #expect(result.status == 0, "\(result.stderr)")
        }
        #expect(eventually(20) { FileManager.default.fileExists(atPath: directory.file("log-2026-01-01.gpx.gz")) })
        #expect(LogRotationPatternCheck.files(directory) == ["log-2026-01-01.gpx.gz", "log-2026-01-02.gpx"])
    }

    @Test("--rotate hourly --keep 5 leaves the five newest hours; --rotate 4k starts file %n+1 once a file holds 4 KiB")
    func keepAndSize() throws {
        let directory = TemporaryDirectory()
        let (track, fixes) = try Self.days(in: directory)
        let hourly = try Tool.run(
            "locationctl", ["replay", track, "--fast", "--format", "json", "--output", directory.file("h-%F-%H.jsonl"), "--rotate", "hourly", "--keep", "5"],
            in: directory)
        #expect(hourly.status == 0, "\(hourly.stderr)")
        let kept = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("h-") }.sorted()
        #expect(kept == ["h-2026-01-03-00.jsonl", "h-2026-01-03-01.jsonl", "h-2026-01-03-02.jsonl", "h-2026-01-03-03.jsonl", "h-2026-01-03-04.jsonl"])
        #expect(hourly.stderr.contains("── log: deleted"))

        let sized = try Tool.run(
            "locationctl", ["replay", track, "--fast", "--format", "json", "--output", directory.file("s-%n.jsonl"), "--rotate", "4k"], in: directory)
        #expect(sized.status == 0, "\(sized.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("s-") }
        #expect(files.count >= 3)
        var lines = 0
        for index in 1...files.count {
            let path = directory.file("s-\(index).jsonl")
            let text = try String(contentsOfFile: path, encoding: .utf8)
            lines += text.split(separator: "\n").filter { $0.contains(#""type":"location""#) }.count
            // A file ends once it has reached the size: it holds at most one event beyond it.
            if index < files.count { #expect(text.utf8.count >= 4096 && text.utf8.count < 4096 + 1024, "\(path): \(text.utf8.count) bytes") }
        }
        #expect(lines == fixes.count)
    }

    @Test("--rotate 4k as fast as possible: GPX files move on at their size, each a whole document; a restart after --keep deleted the low numbers goes on from the highest")
    func sizeWhileFast() throws {
        let directory = TemporaryDirectory()
        let (track, _) = try Self.days(in: directory)
        let pattern = directory.file("log-%n.gpx")
        let first = try Tool.run("locationctl", ["replay", track, "--fast", "--format", "gpx", "--output", pattern, "--rotate", "4k", "--keep", "2"], in: directory)
        #expect(first.status == 0, "\(first.stderr)")
        let names = LogRotationPatternCheck.files(directory)
        try #require(names.count == 2, "\(names)")
        let numbers = names.compactMap { Int($0.dropFirst(4).dropLast(4)) }.sorted()
        #expect(numbers.count == 2 && numbers[0] > 1 && numbers[1] == numbers[0] + 1, "\(names)")
        var info = stat()
        #expect(stat(directory.file("log-\(numbers[0]).gpx"), &info) == 0 && info.st_size >= 4096 && info.st_size < 4096 + 1024, "\(info.st_size) bytes")
        for name in names { #expect(!(try GPXReader.readLocations(contentsOf: directory.file(name), kinds: [.trackPoint])).isEmpty) }
        // Each file below the two kept was deleted, and said so.
        #expect(first.stderr.components(separatedBy: "── log: deleted").count - 1 == numbers[0] - 1)

        let second = try Tool.run("locationctl", ["replay", track, "--fast", "--format", "gpx", "--output", pattern, "--rotate", "4k", "--keep", "2"], in: directory)
        #expect(second.status == 0, "\(second.stderr)")
        let after = LogRotationPatternCheck.files(directory).compactMap { Int($0.dropFirst(4).dropLast(4)) }.sorted()
        #expect(after.first ?? 0 > numbers[1], "a restart goes on from \(numbers[1]), not from 1: \(after)")
    }

    @Test("a rotating log whose file is a FIFO is refused at once (64, no wait for a reader); one another logger holds is 73")
    func rotationRefusesWhatItCannotOwn() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 5)
        // The walk's fixes are on 2024-05-01.
        #expect(mkfifo(directory.file("log-2024-05-01.jsonl"), 0o600) == 0)
        let fifo = try Tool.run("locationctl", ["replay", track, "--fast", "--format", "json", "--output", directory.file("log-%F.jsonl"), "--rotate", "daily"], timeout: 20, in: directory)
        #expect(fifo.status == 64, "\(fifo.stderr)")
        #expect(fifo.stderr.contains("not a regular file") && fifo.stderr.split(separator: "\n").count == 1, "\(fifo.stderr)")

        let locked = directory.file("log-2024-05-01.gpx")
        #expect(FileManager.default.createFile(atPath: locked, contents: Data()))
        let holder = open(locked, O_RDONLY)
        defer { close(holder) }
        #expect(flock(holder, LOCK_EX | LOCK_NB) == 0)
        let busy = try Tool.run("locationctl", ["replay", track, "--fast", "--format", "gpx", "--output", directory.file("log-%F.gpx"), "--rotate", "daily"], timeout: 20, in: directory)
        #expect(busy.status == 73, "\(busy.stderr)")
        #expect(busy.stderr.contains("another program is writing it"), "\(busy.stderr)")
    }

    @Test("rotation's usage errors: a pattern without the date, without %n, an unknown field, a bad size, --keep or --gzip alone, no --output: exit 64, one line")
    func usage() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 5)
        let cases: [([String], String)] = [
            (["--output", directory.file("log.gpx"), "--rotate", "daily"], "needs the date"),
            (["--output", directory.file("log-%F.gpx"), "--rotate", "hourly"], "needs the date and hour"),
            (["--output", directory.file("log-%F.gpx"), "--rotate", "10M"], "needs %n"),
            (["--output", directory.file("log-%q.gpx"), "--rotate", "daily"], "unknown field %q"),
            (["--output", directory.file("log-%n.gpx"), "--rotate", "0"], "a size from 4k"),
            (["--output", directory.file("log-%n.gpx"), "--rotate", "1e300"], "a size from 4k"),
            (["--output", directory.file("log-%n.gpx"), "--rotate", "99999999999999999999G"], "a size from 4k"),
            (["--output", directory.file("%F/log.gpx"), "--rotate", "daily"], "belong in the file name"),
            (["--output", directory.file("log.gpx"), "--keep", "3"], "--keep goes with --rotate"),
            (["--output", directory.file("log.gpx"), "--gzip"], "--gzip goes with --rotate"),
            (["--rotate", "daily"], "give --output a file name pattern"),
            (["--output", directory.file("log-%F.gpx"), "--rotate", "daily", "--keep", "0"], "--keep"),
            (["--output", directory.file("log-%F\n.gpx"), "--rotate", "daily"], "control characters"),
        ]
        for (arguments, message) in cases {
            let result = try Tool.run("locationctl", ["replay", track, "--fast", "--format", "gpx"] + arguments, timeout: 20, in: directory)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(message) && result.stderr.split(separator: "\n").count == 1, "\(arguments): \(result.stderr)")
        }
        let missing = try Tool.run(
            "locationctl", ["replay", track, "--fast", "--output", directory.file("no/such/log-%F.gpx"), "--rotate", "daily"], timeout: 20, in: directory)
        #expect(missing.status == 73 && missing.stderr.contains("cannot write log files in"), "\(missing.stderr)")
    }

    @Test("a rotating GPX logger as a service: SIGHUP reopens its file and it goes on; kill -9 and a restart leave one valid document holding every run")
    func serviceAcrossSignals() throws {
        let directory = TemporaryDirectory()
        let daemon = try RunningDaemon(directory: directory)
        let pattern = directory.file("log-%F.gpx")
        // The walk's fixes are on 2024-05-01.
        let file = directory.file("log-2024-05-01.gpx")
        func points() -> Int { ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").components(separatedBy: "</trkpt>").count - 1 }
        func start() throws -> Process {
            try Tool.start(
                "locationctl", ["watch", "--socket", daemon.socket, "--format", "gpx", "--output", pattern, "--rotate", "daily"], in: directory).0
        }
        let first = try start()
        #expect(eventually { points() >= 5 })
        kill(first.processIdentifier, SIGHUP)
        let afterHangup = points()
        #expect(eventually { points() >= afterHangup + 5 }, "the logger goes on after SIGHUP")
        #expect(first.isRunning)
        #expect(try GPXReader.readLocations(contentsOf: file, kinds: [.trackPoint]).count >= afterHangup, "valid after SIGHUP")
        kill(first.processIdentifier, SIGKILL)
        first.waitUntilExit()
        let afterKill = try GPXReader.readLocations(contentsOf: file, kinds: [.trackPoint]).count
        #expect(afterKill >= afterHangup + 5)
        let second = try start()
        #expect(eventually { points() >= afterKill + 5 })
        second.terminate()
        second.waitUntilExit()
        #expect(second.terminationStatus == 143)
        let all = try GPXReader.readLocations(contentsOf: file, kinds: [.trackPoint])
        #expect(all.count >= afterKill + 5)
        let text = try String(contentsOfFile: file, encoding: .utf8)
        // One document: a track per run and one for the reopening.
        #expect(text.components(separatedBy: "<?xml").count == 2 && text.components(separatedBy: "<trk>").count - 1 == 3)
        #expect(LogRotationPatternCheck.files(directory) == ["log-2024-05-01.gpx"])
    }
}

/// The log files a test left in its directory.
enum LogRotationPatternCheck {
    static func files(_ directory: TemporaryDirectory) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasPrefix("log-") }.sorted()
    }
}
