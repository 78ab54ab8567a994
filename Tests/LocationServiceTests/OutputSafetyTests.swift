import Foundation
import LocationCore
import LocationGPX
import LocationTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `--output` and standard output: nothing at the path destroyed, nothing given lost, a closed pipe a quiet
/// end, a failed write exit 74.
@Suite("Output: never destroys, never loses, stops when nobody reads", .serialized)
struct OutputSafetyTests {
    static func mode(_ path: String) -> mode_t {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : 0
    }

    static func links(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_nlink) : 0
    }

    @Test("an existing file keeps its mode and hard links, a symbolic link's target is written, a new file is 0600")
    func pathIsOpenedNotReplaced() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 5)
        let existing = directory.file("history.jsonl")
        try Data("old\n".utf8).write(to: URL(fileURLWithPath: existing))
        chmod(existing, 0o640)
        let link = directory.file("history-link.jsonl")
        try FileManager.default.linkItem(atPath: existing, toPath: link)
        let symbolic = directory.file("current.jsonl")
        try FileManager.default.createSymbolicLink(atPath: symbolic, withDestinationPath: existing)

        let result = try Tool.run("locationctl", ["replay", track, "--fast", "--format", "json", "--output", symbolic], in: directory)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(Self.mode(existing) == 0o640)
        #expect(Self.links(existing) == 2)
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: symbolic)) == existing, "the link is still a link")
        let written = try String(contentsOfFile: existing, encoding: .utf8)
        #expect(!written.hasPrefix("old") && written.components(separatedBy: "\"type\":\"location\"").count == 6)
        #expect(try String(contentsOfFile: link, encoding: .utf8) == written, "the other name sees the same file")

        let fresh = directory.file("fresh.gpx")
        let created = try Tool.run("locationctl", ["replay", track, "--fast", "--format", "gpx", "--output", fresh], in: directory)
        #expect(created.status == 0)
        #expect(Self.mode(fresh) == 0o600, "a location history is personal data")
    }

    @Test("an output that is the input (itself, through a link, or the file standard input reads) is exit 64 in one line, and the track is untouched")
    func outputThatIsTheInputIsRefused() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 50)
        let original = try Data(contentsOf: URL(fileURLWithPath: track))
        let link = directory.file("link.gpx")
        #expect(symlink(track, link) == 0)
        let cases: [[String]] = [
            ["replay", track, "--fast", "--output", track],
            ["replay", track, "--fast", "--format", "gpx", "--output", link],
            ["plot", track, "--output", track],
            ["plot", link, "--output", track],
        ]
        for arguments in cases {
            let result = try Tool.run("locationctl", arguments, in: directory)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains("is the input file; writing it would destroy the track"), "\(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1)
            #expect(try Data(contentsOf: URL(fileURLWithPath: track)) == original, "\(arguments): the track is as it was")
        }
        // Standard input redirected from the track.
        let piped = try Tool.run(
            "/bin/sh", ["-c", "exec \"$0\" replay - --fast --output \"$1\" < \"$1\"", Tool.path("locationctl"), track], in: directory)
        #expect(piped.status == 64, "\(piped.stderr)")
        #expect(piped.stderr.contains("is the file standard input reads"), "\(piped.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: track)) == original)
    }

    @Test("a FIFO and a device are written to, not replaced by a regular file")
    func fifoAndDeviceAreWrittenTo() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 5)
        let fifo = directory.file("out.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let received = directory.file("received.jsonl")
        let result = try Tool.run(
            "/bin/bash", ["-c", "cat \"$2\" > \"$3\" & \"$0\" replay \"$1\" --fast --format jsonl --output \"$2\"; status=$?; wait; exit $status",
                          Tool.path("locationctl"), track, fifo, received],
            timeout: 60, in: directory)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try String(contentsOfFile: received, encoding: .utf8).components(separatedBy: "\"type\":\"location\"").count == 6)
        var info = stat()
        #expect(lstat(fifo, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO, "still a FIFO")

        let device = try Tool.run("locationctl", ["replay", track, "--fast", "--output", "/dev/null"], in: directory)
        #expect(device.status == 0)
        #expect(lstat("/dev/null", &info) == 0 && info.st_mode & S_IFMT == S_IFCHR)
    }

    @Test("a full device is exit 74 with one plain line, for standard output and --output, in every format")
    func fullDeviceIsExit74() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 50)
        for format in ["text", "json", "gpx"] {
            let toFile = try Tool.run("locationctl", ["replay", track, "--fast", "--format", format, "--output", "/dev/full"], in: directory)
            #expect(toFile.status == 74, "\(format): \(toFile.stderr)")
            #expect(toFile.stderr.hasSuffix("locationctl: cannot write to /dev/full: No space left on device\n"), "\(toFile.stderr)")
            #expect(!toFile.stderr.contains("NSCocoaErrorDomain"))

            let shell = try Tool.run(
                "/bin/sh", ["-c", "exec \"$0\" replay \"$1\" --fast --format \(format) > /dev/full", Tool.path("locationctl"), track],
                in: directory)
            #expect(shell.status == 74, "\(format): \(shell.stderr)")
            #expect(shell.stderr.hasSuffix("locationctl: cannot write to standard output: No space left on device\n"), "\(shell.stderr)")
        }
    }

    @Test("a reader that goes away ends the command at once and quietly with 0, paced or not")
    func closedPipeEndsQuietly() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 2_000)  // 2,000 s of track: 20 s at --speed 100 if nothing stopped it
        for arguments in [["--fast"], ["--speed", "100"], ["--fast", "--format", "gpx"], ["--speed", "100", "--format", "json"]] {
            let started = Date()
            let result = try Tool.run(
                "/bin/bash", ["-c", "\"$0\" replay \"$1\" \(arguments.joined(separator: " ")) | head -3 > /dev/null; exit ${PIPESTATUS[0]}",
                              Tool.path("locationctl"), track],
                timeout: 60, in: directory)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            // (GPX output sends the lifecycle lines to standard error, so that the document stays valid.)
            #expect(!result.stderr.contains("locationctl:"), "\(arguments): \(result.stderr)")
            #expect(Date().timeIntervalSince(started) < 15, "\(arguments): the replay went on for nobody")
        }
    }

    @Test("a reader that goes away while the stream is quiet (the app suspended, its fixes held) ends the command too")
    func closedPipeEndsAQuietStream() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 2_000)  // paced at 10×, 200 s of holding if nothing stopped it
        // The reader reads the fixes written before the suspension and leaves once it has read the suspended
        // state: after that line the replay writes nothing (its fixes are held), so no write can find the
        // reader gone: only watching the pipe ends the command. (A shell loop reads no further than the line;
        // mawk, for one, waits for a whole block.)
        let reader = #"""
            fixes=0
            while IFS= read -r line; do
                case $line in
                *'"type":"location"'*) fixes=$((fixes + 1)) ;;
                *'"state":"suspended"'*) echo "$fixes fixes, then suspended"; exit 0 ;;
                esac
            done
            exit 1
            """#
        let started = Date()
        let result = try Tool.run(
            "/bin/bash", ["-c", "\"$0\" replay \"$1\" --speed 10 --lifecycle 1s:suspended --format json | {\n\(reader)\n}\n"
                              + #"statuses=("${PIPESTATUS[@]}"); echo "reader ${statuses[1]}"; exit ${statuses[0]}"#,
                          Tool.path("locationctl"), track],
            timeout: 60, in: directory)
        #expect(result.lines.last == "reader 0", "the reader saw the suspension: \(result.stdout)")
        let fixes = result.lines.first.flatMap { Int($0.prefix { $0 != " " }) } ?? 0
        #expect(fixes >= 1 && result.lines.first == "\(fixes) fixes, then suspended", "fixes were written first: \(result.stdout)")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stderr.contains("locationctl:"), "\(result.stderr)")
        #expect(Date().timeIntervalSince(started) < 15, "the replay went on for nobody")
    }

    @Test("a paced GPX replay to a file killed with -9 leaves a valid document holding every point written")
    func killedWriterLeavesAValidDocument() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 600)
        let output = directory.file("live.gpx")
        let (process, _, _) = try Tool.start(
            "locationctl", ["replay", track, "--speed", "20", "--format", "gpx", "--output", output], in: directory)
        var points = 0
        let deadline = Date().addingTimeInterval(30)
        while points < 10, Date() < deadline {
            usleep(50_000)
            points = ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").components(separatedBy: "</trkpt>").count - 1
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let after = try GPXReader.readLocations(contentsOf: output, kinds: [.trackPoint])
        #expect(after.count >= 10, "every point written before the kill is there, in a document our reader accepts")
        #expect(after.map(\.timestamp) == Array(LocationFixtures.walk(count: after.count).map(\.timestamp)))
    }

    @Test("SIGHUP, SIGTERM and SIGINT complete the GPX document and exit 128 + the signal", arguments: [SIGHUP, SIGTERM, SIGINT])
    func hangupCompletesTheDocument(signal: Int32) throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 600)
        let output = directory.file("live.gpx")
        let (process, _, _) = try Tool.start(
            "locationctl", ["replay", track, "--speed", "20", "--format", "gpx", "--output", output], in: directory)
        let deadline = Date().addingTimeInterval(30)
        while ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").components(separatedBy: "</trkpt>").count < 4,
            Date() < deadline
        {
            usleep(50_000)
        }
        kill(process.processIdentifier, signal)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 128 + signal)
        let text = try String(contentsOfFile: output, encoding: .utf8)
        #expect(text.hasSuffix("</gpx>\n") && text.components(separatedBy: "</gpx>").count == 2)
        #expect(try GPXReader.readLocations(contentsOf: output, kinds: [.trackPoint]).count >= 3)
    }

    @Test(
        "watch as a suspended app without background location: the held fixes are delivered at exit, not thrown away",
        .enabled(if: GPSDCommandTests.capturesCanBeReplayed, GPSDCommandTests.capturesMissing))
    func watchDeliversHeldFixesAtExit() throws {
        let capture = try GPSDCommandTests.capture("ublox-neo-m9n-nmea.log")
        let directory = TemporaryDirectory()
        let gpsd = try FakeGPSD(capture: capture, directory: directory)
        let result = try Tool.run(
            "locationctl",
            ["watch", "--gpsd", "127.0.0.1:\(gpsd.port)", "--policy", "reduced", "--background-location", "off",
             "--reduced-interval", "1", "--duration", "8", "--format", "json"],
            timeout: 60, in: directory)
        #expect(result.status == 0, "\(result.stderr)")
        let objects = try jsonObjects(result.lines)
        let suspendedAt = objects.firstIndex { $0["type"] as? String == "state" && $0["state"] as? String == "suspended" }
        let batchAt = objects.firstIndex { $0["type"] as? String == "batch" }
        #expect(suspendedAt != nil, "with nothing keeping it running, the background app is suspended at once")
        #expect(!objects.prefix(batchAt ?? objects.count).contains { $0["type"] as? String == "location" },
                "nothing reaches a background app without the background location mode before the batch")
        let batch = try #require(batchAt.map { objects[$0] }, "the held fixes come as one batch at exit")
        let count = try #require(batch["count"] as? Int)
        #expect(count >= 1)
        #expect((batch["locations"] as? [[String: Any]])?.count == count, "the batch line holds its locations")
    }

    @Test("standard input, a FIFO or a shell's <(…) replays in one pass, named as given")
    func nonSeekableInputReplays() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 20)
        let piped = try Tool.run(
            "/bin/bash", ["-c", "cat \"$1\" | \"$0\" replay /dev/stdin --fast --format jsonl --loop | head -45 | grep -c '\"type\":\"location\"'",
                          Tool.path("locationctl"), track],
            in: directory)
        #expect(piped.stdout == "43\n", "two whole passes and more, read from a pipe: \(piped.stdout) \(piped.stderr)")
        let broken = try Tool.run(
            "/bin/bash", ["-c", "printf junk | \"$0\" replay /dev/stdin --fast", Tool.path("locationctl")], in: directory)
        #expect(broken.status == 65)
        #expect(broken.stderr.contains("/dev/stdin:1:1: the file is not XML"), "\(broken.stderr)")
        // `-` is standard input too.
        let dash = try Tool.run(
            "/bin/bash", ["-c", "cat \"$1\" | \"$0\" replay - --fast --format jsonl | grep -c '\"type\":\"location\"'",
                          Tool.path("locationctl"), track],
            in: directory)
        #expect(dash.stdout == "20\n", "\(dash.stdout) \(dash.stderr)")

        // A FIFO made with mkfifo, a writer on the other end: replayed whole, named as given. The writer's
        // status says it wrote the whole track into the FIFO (one the replay never opened would block it: it
        // is then killed).
        let fifo = directory.file("track.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let fromFIFO = try Tool.run(
            "/bin/bash", ["-c", #"cat "$1" > "$2" & writer=$!; "$0" replay "$2" --fast --format jsonl; status=$?; [ $status -eq 0 ] || kill $writer; wait $writer; echo "writer $?" >&2; exit $status"#,
                          Tool.path("locationctl"), track, fifo],
            timeout: 60, in: directory)
        #expect(fromFIFO.status == 0, "\(fromFIFO.stderr)")
        #expect(fromFIFO.stderr.hasSuffix("writer 0\n"), "\(fromFIFO.stderr)")
        let fifoLocations = try jsonObjects(fromFIFO.lines).filter { $0["type"] as? String == "location" }
        #expect(fifoLocations.count == 20, "\(fromFIFO.stdout)")
        #expect(fifoLocations.allSatisfy { $0["source"] as? String == "track.fifo" }, "\(fromFIFO.stdout)")
        var info = stat()
        #expect(lstat(fifo, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO, "still a FIFO")

        // A shell's <(…): a /dev/fd path to a pipe, named by its last component as given.
        let substituted = try Tool.run(
            "/bin/bash", ["-c", #"replay() { echo "given ${1##*/}" >&2; "$0" replay "$1" --fast --format jsonl; }; replay <(cat "$1")"#,
                          Tool.path("locationctl"), track],
            timeout: 60, in: directory)
        #expect(substituted.status == 0, "\(substituted.stderr)")
        let given = try #require(substituted.stderr.split(separator: "\n").first { $0.hasPrefix("given ") }?.dropFirst(6), "\(substituted.stderr)")
        let substitutedLocations = try jsonObjects(substituted.lines).filter { $0["type"] as? String == "location" }
        #expect(substitutedLocations.count == 20, "\(substituted.stdout)")
        #expect(substitutedLocations.allSatisfy { $0["source"] as? String == String(given) }, "named \(given): \(substituted.stdout)")
    }
}
