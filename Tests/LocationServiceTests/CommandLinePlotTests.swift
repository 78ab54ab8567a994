import Foundation
import Testing

/// `locationctl plot` as a user runs it: a replay's JSON lines and GPX drawn, and hostile inputs and outputs
/// each refused with one line and the documented exit code.
@Suite("locationctl plot")
struct CommandLinePlotTests {
    @Test("a replay with a suspension is drawn with its phases, held fixes and the batch's delivery")
    func replayDrawn() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 300)
        let replay = try Tool.run(
            "locationctl", ["replay", track, "--fast", "--format", "json", "--background-location", "off",
                            "--lifecycle", "60s:background,200s:active", "--output", directory.file("run.jsonl")], in: directory)
        #expect(replay.status == 0, "\(replay.stderr)")
        let plot = try Tool.run("locationctl", ["plot", "run.jsonl", "--output", "run.svg"], in: directory)
        #expect(plot.status == 0 && plot.stderr.isEmpty, "\(plot.stderr)")
        let svg = try String(contentsOfFile: directory.file("run.svg"), encoding: .utf8)
        for text in [">foreground</text>", ">suspended (held)</text>", ">held batch delivered</text>", "<polyline class=\"su\""] {
            #expect(svg.contains(text), "missing \(text)")
        }
        let gpx = try Tool.run("locationctl", ["plot", track, "--output", "-"], in: directory)
        #expect(gpx.status == 0 && gpx.stdout.hasPrefix("<?xml") && gpx.stdout.hasSuffix("</svg>\n"))
        #expect(gpx.stdout.contains(">track</text>") && !gpx.stdout.contains(">foreground</text>"))
    }

    @Test("hostile inputs: one line naming the file, the documented code, and an existing output left as it was", arguments: [
        ("empty.jsonl", "", 65, "empty.jsonl is empty: nothing to plot"),
        ("junk.bin", "\u{01}\u{02}binary\u{00}", 65, "junk.bin is neither GPX nor locationctl's JSON lines"),
        ("nan.jsonl", #"{"type":"state","state":"active"}"# + "\n" + #"{"type":"location","latitude":nan,"longitude":1,"timestamp":"2024-01-01T00:00:00Z","isSimulated":false}"# + "\n", 65, "nan.jsonl line 2: not an event line"),
        ("pole.jsonl", #"{"type":"location","latitude":90.5,"longitude":1,"timestamp":"2024-01-01T00:00:00Z","isSimulated":false}"# + "\n", 65, "pole.jsonl line 1: bad location event"),
        ("nothing.jsonl", #"{"type":"state","state":"active"}"# + "\n", 65, "nothing.jsonl holds no positions to plot"),
        // A last line without its line break that is whole JSON is no cut-off line: refused like any other.
        ("last.jsonl", #"{"type":"location","latitude":1,"longitude":1,"timestamp":"2024-01-01T00:00:00Z","isSimulated":false}"# + "\n" + #"{"type":"state","state":"active","event":"didSuspend"}"#, 65, "last.jsonl line 2: bad state event"),
        ("broken.gpx", #"<gpx version="1.1"><trk><trkseg><trkpt lat="1" lon="2">"#, 65, "broken.gpx:1:"),
    ])
    func hostileInput(name: String, content: String, status: Int32, message: String) throws {
        let directory = TemporaryDirectory()
        try content.write(toFile: directory.file(name), atomically: true, encoding: .utf8)
        try "precious".write(toFile: directory.file("old.svg"), atomically: true, encoding: .utf8)
        let result = try Tool.run("locationctl", ["plot", name, "--output", "old.svg"], in: directory)
        #expect(result.status == status)
        #expect(result.stderr.hasPrefix("locationctl: \(message)"), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(try String(contentsOfFile: directory.file("old.svg"), encoding: .utf8) == "precious")
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix(".old.svg") }
        #expect(left.isEmpty, "temporary files left: \(left)")
    }

    @Test("a directory or a device as output is refused with 73; a directory as input with 66")
    func refusedPaths() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 5)
        let toDirectory = try Tool.run("locationctl", ["plot", track, "--output", directory.path], in: directory)
        #expect(toDirectory.status == 73 && toDirectory.stderr.contains("is a directory"), "\(toDirectory.stderr)")
        let toDevice = try Tool.run("locationctl", ["plot", track, "--output", "/dev/full"], in: directory)
        #expect(toDevice.status == 73 && toDevice.stderr == "locationctl: /dev/full is a device, not a file; use --output - to write to standard output\n")
        let fromDirectory = try Tool.run("locationctl", ["plot", directory.path, "--output", "x.svg"], in: directory)
        #expect(fromDirectory.status == 66 && fromDirectory.stderr.contains("is a directory"))
    }

    @Test("an endless device or pipe is refused from its first bytes: /dev/zero is 66, zeros from a pipe 65, and nothing is copied to the temporary directory")
    func endlessInputsAreRefusedAtOnce() throws {
        let directory = TemporaryDirectory()
        let spool = directory.file("tmp")
        #expect(mkdir(spool, 0o700) == 0)
        let device = try Tool.run("locationctl", ["plot", "/dev/zero", "--output", directory.file("a.svg")], environment: ["TMPDIR": spool], in: directory)
        #expect(device.status == 66, "\(device.stderr)")
        #expect(device.stderr == "locationctl: /dev/zero: is a device, not a GPX or JSON lines file; plot reads files and pipes\n", "\(device.stderr)")
        // A pipe that never ends: refused at its first bytes, so the writer gets SIGPIPE long before 10 GB.
        let pipe = try Tool.run(
            "/bin/sh", ["-c", "head -c 10000000000 /dev/zero | \"$0\" plot - --output \"$1\"", Tool.path("locationctl"), directory.file("b.svg")],
            environment: ["TMPDIR": spool], timeout: 30, in: directory)
        #expect(pipe.status == 65, "\(pipe.stderr)")
        #expect(pipe.stderr.contains("standard input is neither GPX nor locationctl's JSON lines"), "\(pipe.stderr)")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: spool)) ?? ["?"]).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: directory.file("a.svg")) && !FileManager.default.fileExists(atPath: directory.file("b.svg")))
    }

    @Test(
        "a picture over another user's file keeps that user as its owner: given back by root, written in place by anyone else",
        .enabled(if: getuid() == 0, "switching users needs root"))
    func replacedFileKeepsItsOwner() throws {
        let directory = TemporaryDirectory()
        chmod(directory.path, 0o755)
        let track = try directory.track(count: 20)
        chmod(track, 0o644)
        let ctl = directory.file("locationctl")
        try FileManager.default.copyItem(atPath: Tool.path("locationctl"), toPath: ctl)
        chmod(ctl, 0o755)
        let owner = { (path: String) -> uid_t in
            var info = stat()
            return stat(path, &info) == 0 ? info.st_uid : .max
        }
        // Root replaces nobody's picture: nobody's still.
        let theirs = directory.file("theirs.svg")
        try Data("old".utf8).write(to: URL(fileURLWithPath: theirs))
        #expect(chown(theirs, 65534, 65534) == 0)
        #expect(try Tool.run("locationctl", ["plot", track, "--output", theirs], in: directory).status == 0)
        #expect(owner(theirs) == 65534)
        #expect(try String(contentsOfFile: theirs, encoding: .utf8).contains("<svg"))

        // Nobody writes over root's file that anyone may write, in a directory anyone may write: in place.
        let shared = directory.file("shared")
        #expect(mkdir(shared, 0o777) == 0 && chmod(shared, 0o777) == 0)
        let roots = shared + "/roots.svg"
        try Data("old".utf8).write(to: URL(fileURLWithPath: roots))
        #expect(chmod(roots, 0o666) == 0)
        let result = try Tool.run(
            ctl, ["plot", track, "--output", roots],
            launcher: ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "{}"], in: directory)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(owner(roots) == 0, "root's file stays root's")
        #expect(try String(contentsOfFile: roots, encoding: .utf8).contains("<svg"))
    }

    @Test(
        "a GPX file that a replay is still writing, 200 fixes a second, plots every time", .timeLimit(.minutes(1)),
        .sanitizerExclusion("LocationServiceTests.CommandLinePlotTests/aGrowingFilePlots()"))
    func aGrowingFilePlots() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 100_000)
        let live = directory.file("live.gpx")
        let (writer, _, _) = try Tool.start(
            "locationctl", ["replay", track, "--speed", "200", "--format", "gpx", "--output", live], in: directory)
        defer {
            writer.terminate()
            writer.waitUntilExit()
        }
        #expect(eventually { ((try? String(contentsOfFile: live, encoding: .utf8)) ?? "").components(separatedBy: "<trkpt").count > 2000 })
        for round in 1...10 {
            let result = try Tool.run("locationctl", ["plot", live, "--output", directory.file("live.svg")], in: directory)
            #expect(result.status == 0, "round \(round): \(result.stderr)")
        }
    }

    @Test("a last JSON line cut off mid-way is left out with one line, and the rest is drawn")
    func truncatedLastLine() throws {
        let directory = TemporaryDirectory()
        let lines = [
            #"{"type":"location","latitude":1,"longitude":2,"timestamp":"2024-01-01T00:00:00Z","isSimulated":false}"#,
            #"{"type":"location","latitude":1.001,"longitude":2,"timestamp":"2024-01-01T00:00:01Z","isSimulated":false}"#,
            #"{"type":"location","latitude":1.00"#,
        ]
        try lines.joined(separator: "\n").write(toFile: directory.file("cut.jsonl"), atomically: true, encoding: .utf8)
        let result = try Tool.run("locationctl", ["plot", "cut.jsonl", "--output", "cut.svg"], in: directory)
        #expect(result.status == 0)
        #expect(result.stderr == "locationctl: cut.jsonl line 3: the last line is incomplete and is left out\n")
        #expect(try String(contentsOfFile: directory.file("cut.svg"), encoding: .utf8).contains("2 points"))
    }

    @Test("a held batch of 8,000 fixes (a 2 MB line) plots, and the same track written the earlier way (a batch line then its location lines) draws the same picture")
    func largeBatchLinesAndTheEarlierFormatDrawAlike() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 8_200)
        let replay = try Tool.run(
            "locationctl", ["replay", track, "--fast", "--format", "json", "--background-location", "off", "--reduced-interval", "0.1",
                            "--lifecycle", "60s:background,8100s:active", "--output", directory.file("new.jsonl")], in: directory)
        #expect(replay.status == 0, "\(replay.stderr)")
        let lines = try String(contentsOfFile: directory.file("new.jsonl"), encoding: .utf8).split(separator: "\n").map(String.init)
        // The earlier format: the batch line without its locations, which follow it as location lines.
        var earlier: [String] = []
        var largest = 0
        for line in lines {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            guard object["type"] as? String == "batch", let locations = object["locations"] as? [[String: Any]] else {
                earlier.append(line)
                continue
            }
            largest = max(largest, line.utf8.count)
            var header = object
            header.removeValue(forKey: "locations")
            earlier.append(String(decoding: try JSONSerialization.data(withJSONObject: header), as: UTF8.self))
            for location in locations {
                var typed = location
                typed["type"] = "location"
                earlier.append(String(decoding: try JSONSerialization.data(withJSONObject: typed), as: UTF8.self))
            }
        }
        #expect(largest > 1 << 21, "a batch line of \(largest) bytes")
        try (earlier.joined(separator: "\n") + "\n").write(toFile: directory.file("old.jsonl"), atomically: true, encoding: .utf8)
        for name in ["new", "old"] {
            let plot = try Tool.run("locationctl", ["plot", "\(name).jsonl", "--output", "\(name).svg"], in: directory)
            #expect(plot.status == 0 && plot.stderr.isEmpty, "\(name): \(plot.stderr)")
        }
        let new = try String(contentsOfFile: directory.file("new.svg"), encoding: .utf8)
        #expect(new.contains(">held batch delivered</text>") && new.contains(">suspended (held)</text>"))
        let old = try String(contentsOfFile: directory.file("old.svg"), encoding: .utf8)
        #expect(old.replacingOccurrences(of: "old.jsonl", with: "new.jsonl") == new, "the same picture from either format (but its title)")
    }
}
