import Foundation
import LocationControl
import LocationCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("locationd killed with SIGKILL: each app comes back as it was", .serialized)
struct DaemonRestartTests {
    @Test(
        "after kill -9 of the daemon an app that was attached is restored as gone and held for; each app keeps its own policy and updates",
        .timeLimit(.minutes(2)))
    func appsComeBackAsTheyWere() throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.file("state"), withIntermediateDirectories: true)
        let extra = ["--journal", directory.file("state/journal"), "--reduced-interval", "1"]
        var daemon = try RunningDaemon(directory: directory, extra: extra, environment: MultiAppDaemonTests.quickAcquisitions)

        // An app attached and in the foreground, and an app whose user stopped its updates and set its interval.
        let app = try LocationdAppProcess(socket: daemon.socket, app: "tracker", in: directory)
        app.send("active")
        #expect(eventually { app.locations(kind: "live").count >= 2 })
        let quiet = try ControlClient(path: daemon.socket)
        _ = try quiet.request(.open(app: "quiet", policy: AppPolicy(reducedInterval: 7, backgroundLocation: true, updates: false)))
        #expect(try daemon.appStatus("quiet").updating == false)
        quiet.close()

        daemon.kill9()
        app.kill9()
        daemon = try RunningDaemon(directory: directory, extra: extra, environment: MultiAppDaemonTests.quickAcquisitions)
        let tracker = try daemon.appStatus("tracker")
        #expect(tracker.abandonedSince != nil, "the attached app went with the daemon: it is gone, not in the foreground")
        #expect(tracker.state == .suspended, "and held for: \(tracker.state)")
        #expect(try eventually { try daemon.appStatus("tracker").held >= 2 }, "its fixes are held until it comes back")
        #expect(daemon.logText.contains("the app tracker is gone (it was attached when locationd stopped)"))

        let restored = try daemon.appStatus("quiet")
        #expect(restored.updating == false, "its updates stay off")
        #expect(restored.reducedInterval == 7, "its own interval: \(restored.reducedInterval ?? -1)")
        #expect(restored.backgroundLocation == true, "its own background mode")
        #expect(restored.abandonedSince == nil, "an app never attached is not gone")

        // The app comes back: it gets what was held for it.
        let back = try LocationdAppProcess(socket: daemon.socket, app: "tracker", in: directory)
        back.send("active")
        #expect(eventually { !(back.locations(kind: "held-restored") + back.locations(kind: "held-foreground")).isEmpty })
        #expect(try daemon.appStatus("tracker").abandonedSince == nil)
        back.send("quit")
        #expect(daemon.stop() == 0)
    }

    @Test(
        "a gone marker that cannot be read, or dated after the restart (a clock behind), still lets the app expire, counted from the restart",
        .timeLimit(.minutes(1)))
    func goneMarkersAlwaysExpire() throws {
        let keep = 5.0
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.file("state"), withIntermediateDirectories: true)
        let extra = ["--journal", directory.file("state/journal")]
        let environment = MultiAppDaemonTests.quickAcquisitions.merging(["LOCATIOND_APPS_KEEP_ABANDONED": "\(Int(keep))"]) { $1 }
        var daemon = try RunningDaemon(directory: directory, extra: extra, environment: environment)
        for app in ["garbled", "future"] {
            var connection: AppConnection? = try AppConnection(socket: daemon.socket, app: app, extra: #","attach":true"#)
            connection = nil
            #expect(try eventually(10) { try daemon.listedStatus(app)?.abandonedSince != nil }, "\(app) went")
            withExtendedLifetime(connection) {}
        }
        daemon.kill9()
        let apps = directory.file("state/apps/\(getuid())")
        try "not a date\n".write(toFile: apps + "/garbled.journal.gone", atomically: true, encoding: .utf8)
        try RFC3339.string(from: Date().addingTimeInterval(8 * 86_400)).write(
            toFile: apps + "/future.journal.gone", atomically: true, encoding: .utf8)

        daemon = try RunningDaemon(directory: directory, extra: extra, environment: environment)
        let restartedAt = ContinuousClock.now
        #expect(try daemon.listedStatus("garbled")?.abandonedSince != nil, "still gone, from the restart on")
        #expect(try daemon.listedStatus("future") != nil, "kept: gone for no time yet")
        var dropped: [String: Duration] = [:]
        #expect(try eventually(20) {
            for app in ["garbled", "future"] where dropped[app] == nil {
                if try daemon.listedStatus(app) == nil { dropped[app] = ContinuousClock.now - restartedAt }
            }
            return dropped.count == 2
        }, "both expire: \(dropped)")
        for (app, after) in dropped {
            #expect(after >= .seconds(keep - 1), "\(app) dropped after \(after), not before apps.keepAbandoned")
        }
        #expect(daemon.stop() == 0)
    }
}
