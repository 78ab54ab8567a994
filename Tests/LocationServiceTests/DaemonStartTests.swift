import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What `locationd` does at start with a replay file it cannot use.
@Suite("locationd start-up checks")
struct DaemonStartTests {
    @Test("a second daemon on the same journal (another socket) exits 73 naming the first's pid; the first goes on untouched")
    func oneJournalOneOwner() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 200)
        let journal = directory.file("held.journal")
        let first = directory.file("first.sock"), second = directory.file("second.sock")
        let (owner, _, _) = try Tool.start(
            "locationd", ["--replay", track, "--speed", "10", "--socket", first, "--journal", journal, "--state", "suspended"],
            in: directory)
        defer {
            kill(owner.processIdentifier, SIGTERM)
            owner.waitUntilExit()
        }
        #expect(DaemonSignalTests.eventually { FileManager.default.fileExists(atPath: first) })
        let stateBefore = try String(contentsOfFile: journal + ".state", encoding: .utf8)
        let result = try Tool.run(
            "locationd", ["--replay", track, "--socket", second, "--journal", journal, "--state", "active"], in: directory)
        #expect(result.status == 73, "\(result.stderr)")
        #expect(
            result.stderr.hasSuffix(
                "locationd: journal \(journal) is in use by another process (pid \(owner.processIdentifier)); "
                    + "a journal has one owner: give each daemon its own journal\n"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: second), "no socket for the refused daemon")
        #expect(try String(contentsOfFile: journal + ".state", encoding: .utf8) == stateBefore, "its state file untouched")
        let status = try Tool.run("locationctl", ["status", "--socket", first, "--format", "json"], in: directory)
        #expect(status.status == 0 && status.stdout.contains("\"state\":\"suspended\""), "\(status.stdout)")
    }

    @Test("an unreachable gpsd is logged when it happens and shown by status")
    func unreachableSourceIsShown() throws {
        let directory = TemporaryDirectory()
        let socket = directory.file("d.sock")
        let (daemon, _, log) = try Tool.start("locationd", ["--gpsd", "127.0.0.1:9", "--socket", socket], in: directory)
        defer {
            kill(daemon.processIdentifier, SIGTERM)
            daemon.waitUntilExit()
        }
        var shown = ""
        #expect(DaemonSignalTests.eventually {
            shown = (try? Tool.run("locationctl", ["status", "--socket", socket], in: directory).stdout) ?? ""
            return shown.contains("last problem: source-unavailable: cannot connect to gpsd at 127.0.0.1:9")
        }, "\(shown)")
        #expect(((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("cannot connect to gpsd at 127.0.0.1:9"))
    }

    @Test(
        "a replay file that is empty, not XML, pointless or damaged at its first point is exit 65 before listening",
        arguments: [
            ("", "the file is empty"),
            ("garbage\u{0}\u{1}", "not XML"),
            (#"<gpx version="1.1" xmlns="http://www.topografix.com/GPX/1/1"><trk><trkseg></trkseg></trk></gpx>"#,
             "no track point, route point or waypoint to replay"),
            (#"<gpx version="1.1" xmlns="http://www.topografix.com/GPX/1/1"><trk><trkseg><trkpt lat="nan" lon="1"/></trkseg></trk></gpx>"#,
             #"lat="nan" is not a number"#),
        ])
    func unusableReplayFile(content: String, message: String) throws {
        let directory = TemporaryDirectory()
        let path = directory.file("bad.gpx")
        try Data(content.utf8).write(to: URL(fileURLWithPath: path))
        let socket = directory.file("d.sock")
        let result = try Tool.run("locationd", ["--replay", path, "--socket", socket], timeout: 30, in: directory)
        #expect(result.status == 65, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines.first?.contains(message) == true, "\(result.stderr)")
        #expect(lines.first?.contains("bad.gpx") == true, "the line names the file: \(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: socket), "no socket is left behind")
    }
}
