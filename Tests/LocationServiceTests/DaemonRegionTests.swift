import Foundation
import LocationCore
import LocationTesting
import Testing

/// Regions in locationd: per app, in its watchers' stream, across a kill -9.
@Suite("locationd monitors each app's regions", .serialized)
struct DaemonRegionTests {
    /// `NAME=LAT,LON,RADIUS` around the demo walk's fix `index` (the daemon replays the walk at 10 fixes a second).
    static func region(_ name: String, at index: Int, radius: Int) -> String {
        let centre = LocationFixtures.walk(index)
        return "\(name)=\(centre.latitude),\(centre.longitude),\(radius)"
    }

    /// The region lines in a watch's output file.
    static func regionLines(_ path: String) -> [[String: Any]] {
        let lines = ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        return ((try? jsonObjects(lines)) ?? []).filter { $0["type"] as? String == "region" }
    }

    @Test("region add on an app: its watcher gets enter and exit at the walk's crossings; list shows the state; a kill -9 and a restart keep the region and its state")
    func regionsThroughTheDaemon() throws {
        let directory = TemporaryDirectory()
        let journal = directory.file("held.journal")
        var daemon = try RunningDaemon(directory: directory, extra: ["--journal", journal])
        let add = try Tool.run("locationctl", ["region", "add", Self.region("spot", at: 150, radius: 10), "--app", "tracker", "--socket", daemon.socket], in: directory)
        #expect(add.status == 0, "\(add.stderr)")
        let (watch, out, err) = try Tool.start("locationctl", ["watch", "--socket", daemon.socket, "--app", "tracker", "--format", "json"], in: directory)
        defer { if watch.isRunning { kill(watch.processIdentifier, SIGKILL) } }
        #expect(eventually(60) { Self.regionLines(out).count >= 2 }, "\((try? String(contentsOfFile: err, encoding: .utf8)) ?? "")")
        let events = Self.regionLines(out)
        #expect(events.prefix(2).map { $0["event"] as? String } == ["enter", "exit"], "\(events)")
        #expect(events.allSatisfy { $0["region"] as? String == "spot" })
        let list = try Tool.run("locationctl", ["region", "list", "--app", "tracker", "--socket", daemon.socket, "--format", "json"], in: directory)
        #expect(list.status == 0, "\(list.stderr)")
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]])
        #expect(listed.count == 1 && listed.first?["identifier"] as? String == "spot" && listed.first?["state"] as? String == "outside", "\(list.stdout)")
        // Nothing for the shared app: regions are each app's own.
        let shared = try Tool.run("locationctl", ["region", "list", "--socket", daemon.socket], in: directory)
        #expect(shared.status == 0 && shared.stdout.isEmpty, "\(shared.stdout)")
        #expect(shared.stderr.contains("the app default monitors no region"), "\(shared.stderr)")

        // Saved within half a second of the exit (saves are coalesced): the kill comes after it is on disk.
        let saved = directory.file("apps/\(getuid())/tracker.journal.regions")
        #expect(eventually(10) { ((try? String(contentsOfFile: saved, encoding: .utf8)) ?? "").contains(#""state":"outside""#) }, "\(saved)")
        daemon.kill9()
        daemon = try RunningDaemon(directory: directory, extra: ["--journal", journal])
        let after = try Tool.run("locationctl", ["region", "list", "--app", "tracker", "--socket", daemon.socket], in: directory)
        #expect(after.status == 0, "\(after.stderr)")
        #expect(after.stdout.hasPrefix("spot ") && after.stdout.contains("outside"), "\(after.stdout)")
        let removed = try Tool.run("locationctl", ["region", "remove", "spot", "--app", "tracker", "--socket", daemon.socket], in: directory)
        #expect(removed.status == 0, "\(removed.stderr)")
        let again = try Tool.run("locationctl", ["region", "remove", "spot", "--app", "tracker", "--socket", daemon.socket], in: directory)
        #expect(again.status == 66 && again.stderr.contains("no region"), "\(again.stderr)")
    }

    @Test("locationd --region gives the shared app its regions, and a malformed one is exit 64 in one line naming it")
    func configuredRegions() throws {
        let directory = TemporaryDirectory()
        let daemon = try RunningDaemon(directory: directory, extra: ["--region", Self.region("near", at: 5, radius: 30), "--region", "far=10,10,100,60"])
        let list = try Tool.run("locationctl", ["region", "list", "--socket", daemon.socket], in: directory)
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdout.split(separator: "\n").map { $0.split(separator: " ").first.map(String.init) ?? "" } == ["far", "near"], "\(list.stdout)")
        #expect(list.stdout.contains("dwell 60 s"))
        for bad in ["near", "x=1,2,-5", "x=91,0,1"] {
            let result = try Tool.run("locationd", ["--check-config", "--region", bad], timeout: 20, in: directory)
            #expect(result.status == 64, "\(bad): \(result.stderr)")
            #expect(result.stderr.contains("--region 1") && result.stderr.split(separator: "\n").count == 1, "\(bad): \(result.stderr)")
        }
        let usage = try Tool.run("locationctl", ["region", "add", "x=1,2", "--socket", daemon.socket], in: directory)
        #expect(usage.status == 64, "\(usage.stderr)")
    }
}
