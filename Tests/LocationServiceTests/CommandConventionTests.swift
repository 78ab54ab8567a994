import Foundation
import LocationControl
import LocationCore
import LocationService
import LocationTesting
import Testing

/// What a Unix user expects of `locationctl` and `locationd` beside their neighbours: `--version`, one
/// `--format` vocabulary, locations alone on standard output in text, exit codes that tell an interrupted
/// run from a finished one, and help and text columns that read cleanly.
@Suite("locationctl and locationd follow the conventions of command-line tools", .serialized)
struct CommandConventionTests {
    @Test("--version prints the one version string on both programs and exits 0")
    func version() throws {
        let directory = TemporaryDirectory()
        for program in ["locationctl", "locationd"] {
            let result = try Tool.run(program, ["--version"], in: directory)
            #expect(result.status == 0, "\(program): \(result.stderr)")
            #expect(result.stdout == ServiceVersion.string + "\n", "\(program): \(result.stdout)")
            #expect(result.stderr.isEmpty)
        }
        #expect(ServiceVersion.string.split(separator: ".").count == 3)
    }

    @Test("--format json, its old name jsonl and JSON in capitals give the same replay, line for line")
    func formatAliases() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 40)
        let outputs = try ["json", "jsonl", "JSON"].map { format in
            let result = try Tool.run(
                "locationctl", ["replay", track, "--fast", "--format", format, "--lifecycle", "10s:suspended,20s:active"],
                in: directory)
            #expect(result.status == 0, "\(format): \(result.stderr)")
            return result.stdout
        }
        #expect(outputs[0] == outputs[1] && outputs[1] == outputs[2])
        let types = Set(try jsonObjects(outputs[0].split(separator: "\n").map(String.init)).compactMap { $0["type"] as? String })
        #expect(types == ["state", "location", "batch"], "JSON lines keep every event on standard output, typed")
    }

    @Test(
        "a --format that is empty, unknown, or not one the command writes is one usage line and exit 64",
        arguments: [
            (["replay", "TRACK", "--fast", "--format", ""], "''"),
            (["watch", "--format", "xml"], "'xml'"),
            (["current", "--format", "csv"], "'csv'"),
            (["status", "--format", "gpx"], "'gpx'"),
            (["state", "--format", "jsonlines"], "'jsonlines'"),
        ])
    func badFormat(arguments: [String], quoted: String) throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 3)
        let result = try Tool.run("locationctl", arguments.map { $0 == "TRACK" ? track : $0 }, in: directory)
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(result.stderr.contains(quoted) && result.stderr.contains("--format"), "\(result.stderr)")
    }

    @Test("20,000 stray arguments are one usage line of readable length, exit 64")
    func strayArgumentsGiveOneShortLine() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 5)
        let result = try Tool.run("locationctl", ["replay", track] + (1...20_000).map(String.init), in: directory)
        #expect(result.status == 64, "\(result.stderr.prefix(300))")
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].count < 400, "\(result.stderr.prefix(300))")
        #expect(result.stderr.contains("20000 unexpected arguments: '1', '2'") && result.stderr.contains("more characters)"))
    }

    @Test("a file name that is not UTF-8 is one line naming its bytes and exit 64, not 'no such file' of another name")
    func argumentsThatAreNotUTF8AreNamed() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 5)
        // A Latin-1 name: `caf\xe9.gpx`. Swift cannot hold it in a String, so the shell makes it.
        let result = try Tool.run(
            "/bin/bash", ["-c", #"cp "$1" "$2/caf$(printf '\351').gpx" && cd "$2" && "$0" replay "caf$(printf '\351').gpx" --fast"#,
                          Tool.path("locationctl"), track, directory.path],
            in: directory)
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr == "locationctl: argument 2 (caf\\xe9.gpx) is not UTF-8, and locationctl reads text only as UTF-8; for a file or directory so named, rename it or give a link with a UTF-8 name (see 'locationctl --help')\n")
        // A variable of ours is read the same way: the socket it names is not replaced by another name.
        let variable = try Tool.run(
            "/bin/bash", ["-c", #"LOCATIOND_SOCKET="$1/s$(printf '\351').sock" "$0" status"#, Tool.path("locationctl"), directory.path],
            in: directory)
        #expect(variable.status == 64, "\(variable.stderr)")
        #expect(variable.stderr.hasPrefix("locationctl: LOCATIOND_SOCKET (\(directory.path)/s\\xe9.sock) is not UTF-8"), "\(variable.stderr)")
    }

    @Test("in text, replay writes one line per location on standard output and the state and batch lines on standard error")
    func textLocationsAloneOnStandardOutput() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 40)
        let result = try Tool.run(
            "locationctl", ["replay", track, "--fast", "--lifecycle", "10s:suspended,20s:active"], in: directory)
        #expect(result.status == 0, "\(result.stderr)")
        let json = try Tool.run(
            "locationctl", ["replay", track, "--fast", "--lifecycle", "10s:suspended,20s:active", "--format", "json"], in: directory)
        // Live fixes one to a line, held ones inside their batch line.
        let locations = try jsonObjects(json.lines).reduce(0) { count, object in
            count + (object["type"] as? String == "location" ? 1 : (object["locations"] as? [Any])?.count ?? 0)
        }
        #expect(result.lines.count == locations && locations > 0, "\(result.stdout)")
        #expect(result.lines.allSatisfy { $0.hasPrefix("2024-") }, "\(result.stdout)")
        let commentary = result.stderr.split(separator: "\n").map(String.init)
        #expect(commentary.contains { $0.hasPrefix("── state: suspended (in the background, not running") }, "\(result.stderr)")
        #expect(commentary.contains { $0.hasPrefix("── batch: ") }, "\(result.stderr)")
    }

    @Test("standard error closed (2>&-): the output is whole and exit 0; standard output closed (>&-): exit 74 saying so")
    func closedStandardStreams() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 40)
        let output = directory.file("out.txt")
        let arguments = ["replay", track, "--fast", "--lifecycle", "10s:suspended,20s:active"]
        let noStandardError = try Tool.run(
            "locationctl", arguments + ["--output", output], launcher: ["/bin/sh", "-c", #"exec "$0" "$@" 2>&-"#, "{}"], in: directory)
        #expect(noStandardError.status == 0)
        let lines = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n")
        #expect(!lines.isEmpty && lines.allSatisfy { $0.hasPrefix("2024-") }, "nothing meant for standard error landed in the file")
        let noStandardOutput = try Tool.run(
            "locationctl", arguments, launcher: ["/bin/sh", "-c", #"exec "$0" "$@" >&-"#, "{}"], in: directory)
        #expect(noStandardOutput.status == 74)
        #expect(noStandardOutput.stderr.hasSuffix("locationctl: cannot write to standard output: it is closed\n"), "\(noStandardOutput.stderr)")
    }

    @Test("watch --count 1 > file holds exactly one line, the location, and exits 0")
    func watchCountOneWritesOneLine() throws {
        let daemon = try RunningDaemon()
        let result = try daemon.ctl(["watch", "--count", "1"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.lines.count == 1, "\(result.stdout)")
        #expect(result.stdout.hasPrefix("2024-") && result.stdout.contains("m/s "), "a location line: \(result.stdout)")
        #expect(result.stderr.hasPrefix("── state: active"), "the state line is on standard error: \(result.stderr)")
    }

    @Test("watch ended by SIGINT, SIGTERM or SIGHUP exits 130, 143 or 129; ended by --duration it exits 0", arguments: [SIGINT, SIGTERM, SIGHUP])
    func watchInterrupted(signal: Int32) throws {
        let daemon = try RunningDaemon()
        let (process, out, _) = try Tool.start("locationctl", ["watch", "--socket", daemon.socket, "--format", "json"], in: daemon.directory)
        try daemon.waitForWatchers(1)
        kill(process.processIdentifier, signal)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 128 + signal)
        let lines = ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        #expect(try jsonObjects(lines).count == lines.count, "what was written is whole lines")

        let timed = try daemon.ctl(["watch", "--duration", "0.5", "--format", "json"])
        #expect(timed.status == 0, "\(timed.stderr)")
    }

    @Test("a replay interrupted as it starts, before its output began, still reads as interrupted to a shell", arguments: [SIGINT, SIGTERM])
    func signalAtStartUp(signal: Int32) throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 600)
        let (process, _, _) = try Tool.start(
            "locationctl", ["replay", track, "--speed", "20", "--format", "gpx", "--output", directory.file("out.gpx")], in: directory)
        kill(process.processIdentifier, signal)
        process.waitUntilExit()
        // Before the handlers are installed the default action ends it (a shell reports 128 + the signal
        // too); after, it completes its output and exits 128 + the signal. Never 0.
        let killed = process.terminationReason == .uncaughtSignal && process.terminationStatus == signal
        let exited = process.terminationReason == .exit && process.terminationStatus == 128 + signal
        #expect(killed || exited, "\(process.terminationReason) \(process.terminationStatus)")
    }

    @Test("current --accuracy is a bound: exit 75 naming the best fix when none is that accurate; --best-effort prints the best instead")
    func currentAccuracyIsABound() throws {
        let daemon = try RunningDaemon()
        let unmet = try daemon.ctl(["current", "--accuracy", "0.001", "--timeout", "2"])
        #expect(unmet.status == 75, "\(unmet.stdout)\(unmet.stderr)")
        #expect(unmet.stdout.isEmpty)
        #expect(unmet.stderr.contains(/no fix within 0\.001 m came in 2 s; the best was (±\d+\.\d m|of unknown accuracy) \(/), "\(unmet.stderr)")
        let best = try daemon.ctl(["current", "--accuracy", "0.001", "--timeout", "2", "--best-effort", "--format", "json"])
        #expect(best.status == 0, "\(best.stderr)")
        #expect(best.stdout.hasPrefix(#"{"type":"location","latitude":"#), "a typed line, as watch writes: \(best.stdout)")
        let met = try daemon.ctl(["current", "--accuracy", "40000000", "--timeout", "10"])
        #expect(met.status == 0 || met.stderr.contains("of unknown accuracy"), "\(met.stderr)")
        let alone = try daemon.ctl(["current", "--best-effort"])
        #expect(alone.status == 64 && alone.stderr.contains("--best-effort goes with --accuracy"), "\(alone.stderr)")
    }

    @Test("status and current in json leave slashes unescaped alike, and a suspended daemon reads as not running")
    func daemonReports() throws {
        let daemon = try RunningDaemon()
        let status = try daemon.ctl(["status", "--format", "json"])
        #expect(status.status == 0, "\(status.stderr)")
        #expect(status.stdout.contains(#""socket":"/"#) && !status.stdout.contains(#"\/"#), "\(status.stdout)")
        let current = try daemon.ctl(["current", "--format", "jsonl", "--timeout", "10"])
        #expect(current.status == 0, "\(current.stderr)")
        #expect(!current.stdout.contains(#"\/"#), "\(current.stdout)")
        let gpx = try daemon.ctl(["current", "--format", "gpx", "--timeout", "10"])
        #expect(gpx.status == 0, "\(gpx.stderr)")
        #expect(gpx.stdout.contains("<trkpt ") && gpx.stdout.hasSuffix("</gpx>\n"), "\(gpx.stdout)")

        let suspended = try daemon.ctl(["state", "suspended"])
        #expect(suspended.stdout == "suspended (in the background, not running, reduced accuracy)\n", "\(suspended.stdout)")
        let text = try daemon.ctl(["status"])
        #expect(text.stdout.contains("state:    suspended (in the background, not running)\n"), "\(text.stdout)")
        #expect(daemon.stop() == 0, "a graceful stop on SIGTERM is 0 for the daemon")
    }

    @Test("no option's help states its default twice", arguments: ["current", "watch", "replay", "status", "state", "plot"])
    func helpSaysEachDefaultOnce(subcommand: String) throws {
        let directory = TemporaryDirectory()
        let result = try Tool.run("locationctl", [subcommand, "--help"], in: directory)
        #expect(result.status == 0)
        // One option's help runs from its `  --name` line to the next.
        let options = result.stdout.components(separatedBy: "\n  -").dropFirst()
        let mentions = options.map { $0.lowercased().components(separatedBy: "default").count - 1 }
        // Every subcommand has several options, at least two of which state a default: the check has
        // something to look at (a help layout this split misses would otherwise pass it unread).
        #expect(options.count >= 5 && options.contains { $0.hasPrefix("h, --help") }, "\(subcommand): \(result.stdout)")
        #expect(mentions.filter { $0 >= 1 }.count >= 2, "\(subcommand): \(result.stdout)")
        for (option, count) in zip(options, mentions) {
            #expect(count <= 1, "\(subcommand): \(option)")
        }
    }

    @Test("text location lines of usual values fit 80 columns with every correction status, stay aligned, and leave out today's date")
    func textLinesFitEightyColumns() {
        let today = Date(timeIntervalSince1970: 1_714_543_200)
        var plain = LocationFixtures.walk(0)
        plain.timestamp = today
        plain.satellitesUsed = 9
        plain.satellitesVisible = 14
        let empty = Location(latitude: 0, longitude: 0, timestamp: today.addingTimeInterval(0.123456789))
        var lines = [plain, empty].map { TextEventFormatter.line($0, today: today) }
        var replayed = plain
        replayed.isSimulated = true
        replayed.satellitesUsed = 12
        replayed.satellitesVisible = 24
        lines.append(TextEventFormatter.line(replayed, today: today))
        #expect(lines.last?.hasSuffix("12/24 SIM") == true, "a replayed fix says SIM: \(lines.last ?? "")")
        for status in CorrectionStatus.allCases {
            let widest = Location(
                latitude: -89.9999999, longitude: -179.9999999, altitude: -999.9, horizontalAccuracy: 99.9, speed: 99.9,
                course: 359.4, timestamp: today.addingTimeInterval(17 * 3600 + 59 * 60 + 59.9), fixMode: .threeDimensional,
                correctionStatus: status, satellitesUsed: 12, satellitesVisible: 24)
            lines.append(TextEventFormatter.line(widest, today: today))
        }
        for line in lines {
            #expect(line.count <= 80, "\(line.count) columns: \(line)")
            #expect(!line.contains("2024-"), "today's date left out: \(line)")
        }
        #expect(lines[0].hasPrefix("06:00:00.0Z  "), "\(lines[0])")
        #expect(lines[1].hasPrefix("06:00:00.1Z  "), "\(lines[1])")
        func column(_ marker: String) -> [Int] {
            lines.compactMap { line in line.range(of: marker).map { line.distance(from: line.startIndex, to: $0.upperBound) } }
        }
        // Values are right-aligned: a column's units end at one place on every line that has the value.
        let accuracyEnds = lines.compactMap { line in
            line.range(of: "±").flatMap { line[$0.upperBound...].firstIndex(of: "m") }.map { line.distance(from: line.startIndex, to: $0) }
        }
        #expect(Set(accuracyEnds).count == 1 && accuracyEnds.count == lines.count - 1, "\(lines.joined(separator: "\n"))")
        for marker in ["m/s ", "° "] {
            #expect(Set(column(marker)).count == 1 && column(marker).count == lines.count - 1, "\(marker): \(lines.joined(separator: "\n"))")
        }
        // Unknown values (altitude, accuracy, speed, course, mode) are one dash each, never 0 or "nan".
        #expect(lines[1].components(separatedBy: "–").count - 1 == 5 && !lines[1].contains("nan"), "\(lines[1])")
        // Another day's fix carries its date, and a value wider than usual keeps the line whole.
        let elsewhere = Location(
            latitude: 1, longitude: 2, altitude: 12345.6, horizontalAccuracy: 99999.9, speed: 99999.9, course: 10,
            timestamp: today.addingTimeInterval(-86_400), fixMode: .twoDimensional)
        let other = TextEventFormatter.line(elsewhere, today: today)
        #expect(other.hasPrefix("2024-04-30 06:00:00.0Z"), "\(other)")
        #expect(other.contains("12345.6m ±99999.9m 99999.9m/s  10° 2D"), "\(other)")
    }
}
