import Foundation
import LocationControl
import LocationCore
import LocationService
import LocationTesting
import Testing

/// The daemon says why it has no fix: a source that is down answers `current` at once, and a replay that
/// has ended keeps its last fix.
@Suite("locationd: a source that is down or has ended", .serialized)
struct DaemonSourceDownTests {
    @Test("with gpsd unreachable, current answers at once with exit 69 and gpsd's reason; status shows it and since when")
    func unreachableGPSD() throws {
        let directory = TemporaryDirectory()
        let socket = directory.file("d.sock")
        let before = Date()
        let (daemon, _, _) = try Tool.start("locationd", ["--gpsd", "127.0.0.1:9", "--socket", socket], in: directory)
        defer {
            kill(daemon.processIdentifier, SIGTERM)
            daemon.waitUntilExit()
        }
        var status: DaemonStatus?
        #expect(DaemonSignalTests.eventually {
            status = try? ControlClient.request(.status, path: socket).decode(DaemonStatus.self, forKey: "status")
            return status?.sourceDownReason != nil
        }, "\(String(describing: status))")
        #expect(status?.sourceStatus == .unavailable)
        #expect(status?.sourceDownReason?.contains("cannot connect to gpsd at 127.0.0.1:9") == true)
        let since = status?.sourceDownSince.flatMap { RFC3339.parse($0)?.date }
        #expect(since.map { $0 >= before.addingTimeInterval(-1) && $0 <= Date() } == true, "\(String(describing: status?.sourceDownSince))")

        let started = Date()
        let current = try Tool.run("locationctl", ["current", "--socket", socket, "--timeout", "20"], in: directory)
        let took = Date().timeIntervalSince(started)
        #expect(current.status == 69, "\(current.stderr)")
        #expect(took < 5, "current took \(took) s")
        #expect(current.stderr.contains("cannot connect to gpsd at 127.0.0.1:9"), "\(current.stderr)")
        #expect(current.stderr.contains("unavailable since"), "\(current.stderr)")
        #expect(current.stdout.isEmpty)

        let text = try Tool.run("locationctl", ["status", "--socket", socket], in: directory).stdout
        #expect(text.contains("(unavailable since \(status?.sourceDownSince ?? "?"))"), "\(text)")
        #expect(text.contains("cannot connect to gpsd at 127.0.0.1:9"), "\(text)")

        // A new watcher is told at once, after the state line, rather than left on a blank screen.
        let watch = try Tool.run("locationctl", ["watch", "--socket", socket, "--duration", "1", "--format", "json"], in: directory)
        let lines = watch.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count >= 2, "\(watch.stdout)")
        #expect(lines.dropFirst().first?.contains(#""code":"source-unavailable""#) == true, "\(watch.stdout)")
        #expect(lines.dropFirst().first?.contains("cannot connect to gpsd at 127.0.0.1:9") == true, "\(watch.stdout)")
    }

    @Test("after a non-looping replay has ended, current and status give its last point, and it is not replayed again",
          arguments: ["1", "100"])
    func endedReplayKeepsItsLastFix(speed: String) throws {
        let directory = TemporaryDirectory()
        let socket = directory.file("d.sock")
        let points = 3
        let track = try directory.track(count: points)
        let last = LocationFixtures.walk(points - 1)
        let (daemon, _, _) = try Tool.start("locationd", ["--replay", track, "--speed", speed, "--socket", socket], in: directory)
        defer {
            kill(daemon.processIdentifier, SIGTERM)
            daemon.waitUntilExit()
        }
        func status() -> DaemonStatus? {
            try? ControlClient.request(.status, path: socket).decode(DaemonStatus.self, forKey: "status")
        }
        #expect(DaemonSignalTests.eventually { status()?.sourceStatus == .ended })
        #expect(status()?.lastFix?.timestamp == last.timestamp)
        // Past the 2 s within which `current` answers with the last fix however the source is doing.
        usleep(2_500_000)
        for _ in 0..<2 {
            let current = try Tool.run("locationctl", ["current", "--socket", socket, "--format", "json", "--timeout", "10"], in: directory)
            #expect(current.status == 0, "\(current.stderr)")
            let object = try JSONSerialization.jsonObject(with: Data(current.stdout.utf8)) as? [String: Any]
            // (Foundation's JSON number parser on Linux can be one ulp off: a tolerance, not a different point.)
            #expect((object?["latitude"] as? Double).map { abs($0 - last.latitude) < 1e-9 } == true, "\(current.stdout)")
            #expect(object?["timestamp"] as? String == RFC3339.string(from: last.timestamp, fractionDigits: 3), "\(current.stdout)")
        }
        // Nothing started the replay again: a second later the last fix is still the last point.
        usleep(1_200_000)
        #expect(status()?.lastFix?.timestamp == last.timestamp)
        #expect(status()?.sourceStatus == .ended)
        // A new watcher is told the replay has ended.
        let watch = try Tool.run("locationctl", ["watch", "--socket", socket, "--duration", "1"], in: directory)
        // In text the lines about the stream are on standard error: no location, so nothing on standard output.
        #expect(watch.stdout.isEmpty, "\(watch.stdout)")
        #expect(watch.stderr.split(separator: "\n").map(String.init) == ["── state: active (foreground, high accuracy)", "── source: ended"], "\(watch.stderr)")
    }
}
