import Foundation
import GPSDTestSupport
import LocationControl
import LocationCore
import LocationGPX
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Waits (polling, without blocking a thread) until `condition` holds, at most `seconds`.
func eventuallyAsync(_ seconds: Double, _ condition: @Sendable () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return condition()
}

/// One app's connection to a running locationd: it opens the app, watches it, and records every line.
final class AppConnection: Sendable {
    let app: String
    let client: ControlClient
    private let lines = Locked<[String]>([])
    private let replies = Locked<[String]>([])

    /// Opens `app` (with `policy` given as the request's extra members) and watches it.
    init(socket: String, app: String, extra: String = "", watch: Bool = true) throws {
        self.app = app
        client = try ControlClient(path: socket)
        try client.send(rawLine: Array(#"{"command":"open","app":"\#(app)"\#(extra)}"#.utf8) + [0x0A])
        let opened = try JSONSerialization.jsonObject(with: Data(client.readLine(timeout: .seconds(10)))) as? [String: Any]
        guard opened?["ok"] as? Bool == true else {
            throw LocationError(.sourceUnavailable, "open \(app) failed: \(String(describing: opened))")
        }
        guard watch else { return }
        try client.send(.watch)
        let watching = try JSONSerialization.jsonObject(with: Data(client.readLine(timeout: .seconds(10)))) as? [String: Any]
        guard watching?["watching"] as? Bool == true else { throw LocationError(.sourceUnavailable, "watch \(app) failed") }
        let lines = self.lines
        let replies = self.replies
        let client = self.client
        Thread.detachNewThread {
            while let line = try? client.readLine(timeout: nil) {
                let text = String(decoding: line, as: UTF8.self)
                if text.hasPrefix(#"{"ok":"#) {
                    replies.withLock { $0.append(text) }
                } else {
                    lines.withLock { $0.append(text) }
                }
            }
        }
    }

    deinit { client.close() }

    /// Event lines so far.
    var events: [[String: Any]] {
        lines.value.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }
    /// The track times (seconds since 1970) of the locations so far, live and held.
    var times: [Double] {
        events.filter { $0["type"] as? String == "location" }.compactMap { $0["timestamp"] as? String }
            .compactMap { RFC3339.parse($0)?.date.timeIntervalSince1970 }
    }
    var batches: [[String: Any]] { events.filter { $0["type"] as? String == "batch" } }
    var states: [String] { events.filter { $0["type"] as? String == "state" }.compactMap { $0["state"] as? String } }

    /// Moves the app to `state` on this connection and waits for the reply.
    func setState(_ state: String) throws {
        let before = replies.value.count
        try client.send(.state(set: state))
        let deadline = Date().addingTimeInterval(10)
        while replies.value.count == before, Date() < deadline { usleep(5_000) }
        guard replies.value.count > before else { throw LocationError(.sourceUnavailable, "no reply to state \(state)") }
    }
}

/// Waits (polling real processes) until `condition` holds, at most `seconds`.
@discardableResult
func eventually(_ seconds: Double = 20, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        usleep(20_000)
    }
    return try condition()
}

/// Several apps on one locationd at once, each with its own lifecycle, policy and held fixes.
@Suite("locationd serves many apps", .serialized)
struct MultiAppDaemonTests {
    /// Background acquisitions end at once on a replay's fixes, which carry no accuracy.
    static let quickAcquisitions = ["LOCATIOND_REDUCED_ACQUISITION_TIMEOUT": "0.2"]

    @Test("two apps in different states on one replay each get what their own policy says, and neither's change touches the other")
    func twoApps() throws {
        let daemon = try RunningDaemon(environment: Self.quickAcquisitions)
        let front = try AppConnection(socket: daemon.socket, app: "front")
        // Intervals count in the fixes' time: 10 s of track is one second of this 10× replay.
        let back = try AppConnection(
            socket: daemon.socket, app: "back", extra: #","reducedInterval":10,"backgroundLocation":true"#)
        try back.setState("background")
        #expect(eventually { front.times.count >= 40 && back.times.count >= 3 })

        // The replay runs at 10 fixes a second: the active app gets every one, the background app one in ten.
        let frontTimes = front.times
        #expect(zip(frontTimes, frontTimes.dropFirst()).allSatisfy { $1 - $0 == 1 }, "every epoch, in order: \(frontTimes.prefix(20))")
        let backTimes = back.times
        let gaps = zip(backTimes, backTimes.dropFirst()).map { $1 - $0 }
        #expect(gaps.allSatisfy { $0 >= 9 }, "one fix per 10 s of track (one second of real time): \(gaps)")
        #expect(Double(backTimes.count) < Double(frontTimes.count) / 3, "\(backTimes.count) against \(frontTimes.count)")
        #expect(front.states == ["active"], "the other app's background changed nothing here: \(front.states)")
        // The background location mode keeps it running in the background: it is not suspended.
        #expect(back.states == ["active", "inactive", "background"], "\(back.states)")

        // The foreground app going to the background (mode off) holds its own fixes; the other goes on.
        let backBefore = back.times.count
        try front.setState("suspended")
        let frontAtSuspend = front.times.count
        #expect(eventually { back.times.count >= backBefore + 2 }, "the background app still gets its fixes")
        #expect(front.times.count == frontAtSuspend, "nothing live reaches a suspended app")
        let held = try daemon.appStatus("front").held
        #expect(held > 0)
        try front.setState("active")
        #expect(eventually { front.batches.count == 1 })
        #expect(back.batches.isEmpty, "the batch went to its app alone")
        #expect(front.batches.first?["count"] as? Int ?? 0 >= held)
        let defaultStatus = try daemon.status()
        #expect(defaultStatus.state == .active && defaultStatus.policy == .high, "the default app was never touched")
        #expect(daemon.stop() == 0)
    }

    @Test("ten apps in five states at once: each gets its own stream, and each suspended one its own batch alone")
    func tenApps() throws {
        let daemon = try RunningDaemon(environment: Self.quickAcquisitions)
        var apps: [(connection: AppConnection, state: String)] = []
        let plan = ["active", "active", "active", "inactive", "background", "background", "background", "suspended", "suspended", "suspended"]
        for (index, state) in plan.enumerated() {
            let extra = state == "background" ? #","reducedInterval":10,"backgroundLocation":true"# : ""
            let connection = try AppConnection(socket: daemon.socket, app: "app\(index)", extra: extra)
            if state != "active" { try connection.setState(state) }
            apps.append((connection, state))
        }
        #expect(eventually { apps.filter { $0.state == "active" }.allSatisfy { $0.connection.times.count >= 30 } })
        let listed = try daemon.ctl(["status", "--all", "--format", "json"])
        #expect(listed.status == 0, "\(listed.stderr)")
        let statuses = try JSONDecoder().decode([DaemonStatus].self, from: Data(listed.stdout.utf8))
        #expect(statuses.count == 11, "ten apps and default")
        for (connection, state) in apps {
            let status = try #require(statuses.first { $0.app == connection.app })
            #expect(status.state.rawValue == state, "\(connection.app)")
            switch state {
            case "active", "inactive":
                #expect(connection.times.count >= 20, "\(connection.app) \(state): \(connection.times.count)")
            case "background":
                #expect(connection.times.count >= 1 && connection.times.count < 20, "\(connection.app): \(connection.times.count)")
            default:
                #expect(connection.times.isEmpty, "\(connection.app) is suspended: nothing live")
                #expect(status.held > 0, "\(connection.app) holds its fixes")
            }
        }
        // Bring one suspended app back: it alone gets a batch.
        let returning = apps[8].connection
        try returning.setState("active")
        #expect(eventually { returning.batches.count == 1 })
        for (connection, _) in apps where connection !== returning {
            #expect(connection.batches.isEmpty, "\(connection.app) got no batch")
        }
        #expect(daemon.stop() == 0)
    }

    @Test(
        "an app killed with kill -9 while suspended, and the daemon killed with kill -9, then both restarted: every fix held for it comes once, in order, to it alone",
        .timeLimit(.minutes(2)))
    func killedAppAndDaemon() throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.file("state"), withIntermediateDirectories: true)
        let extra = ["--journal", directory.file("state/journal"), "--reduced-interval", "1"]
        var daemon = try RunningDaemon(directory: directory, extra: extra, environment: Self.quickAcquisitions)
        let bystander = try AppConnection(socket: daemon.socket, app: "bystander")

        // The app runs its manager through locationd, goes to the background and is killed there: what it
        // held until then is in its own journal, what came after the daemon holds for it.
        let first = try LocationdAppProcess(socket: daemon.socket, app: "tracker", in: directory)
        first.send("active")
        #expect(eventually { first.locations(kind: "live").count >= 3 })
        first.send("suspended")
        #expect(eventually { first.output.contains(#""state":"suspended""#) })
        let liveBefore = first.locations(kind: "live")
        #expect(eventually { first.held() >= 3 }, "the app's manager holds while suspended")
        #expect(try daemon.appStatus("tracker").held == 0, "the daemon holds nothing while the app is there")
        let heldByApp = first.held()
        first.kill9()
        #expect(try eventually { try daemon.appStatus("tracker").abandonedSince != nil }, "the daemon saw the app go")
        #expect(try eventually { try daemon.appStatus("tracker").held >= 3 }, "and goes on holding for it")
        let heldBeforeCrash = try daemon.appStatus("tracker").held
        daemon.kill9()

        // The replay starts further on, so that what the new daemon holds cannot be mistaken for what the
        // first one held (a replay started again begins at its first point).
        daemon = try RunningDaemon(directory: directory, extra: extra + ["--start-at", "1000"], environment: Self.quickAcquisitions)
        let restored = try daemon.appStatus("tracker")
        #expect(restored.held >= heldBeforeCrash, "the journal kept every held fix: \(restored.held) of \(heldBeforeCrash)")
        #expect(restored.abandonedSince != nil, "restored as gone until the app comes back")
        let bystanderRestored = try daemon.appStatus("bystander")
        #expect(bystanderRestored.abandonedSince == nil && bystanderRestored.state == .active, "an app that never went away resumes as it was")
        let other = try AppConnection(socket: daemon.socket, app: "bystander")

        let second = try LocationdAppProcess(socket: daemon.socket, app: "tracker", in: directory)
        second.send("active")
        // Its own journal's fixes and the daemon's hand-over: one batch or two, oldest first either way.
        let expected = heldByApp + heldBeforeCrash
        #expect(eventually { second.locations(kind: "held-restored").count + second.locations(kind: "held-foreground").count >= expected })
        let batch = second.locations(kind: "held-restored") + second.locations(kind: "held-foreground")
        #expect(
            batch.count >= expected,
            "\(batch.count) delivered; the app held \(heldByApp) when killed, the daemon \(heldBeforeCrash) at its crash")
        #expect(zip(batch, batch.dropFirst()).allSatisfy { $0 < $1 }, "oldest first, none twice: \(batch)")
        #expect(Set(batch).isDisjoint(with: liveBefore), "none of them had reached the app before")
        #expect(eventually { second.locations(kind: "live").count >= 2 }, "then live fixes")
        second.send("quit")
        #expect(other.batches.isEmpty && bystander.batches.isEmpty, "the batch went to that app alone")
        #expect(try daemon.appStatus("tracker").held == 0)
        #expect(daemon.stop() == 0)
    }

    @Test(
        "an app that comes back in the background takes what locationd held while it was gone into its own batch, even while another client watches the app and acknowledges",
        .timeLimit(.minutes(2)))
    func swiftClientTakesTheHeldFixesBackInTheBackground() throws {
        let directory = TemporaryDirectory()
        let daemon = try RunningDaemon(directory: directory, extra: ["--reduced-interval", "1"], environment: Self.quickAcquisitions)
        let first = try LocationdAppProcess(socket: daemon.socket, app: "tracker", in: directory)
        first.send("active")
        #expect(eventually { first.locations(kind: "live").count >= 2 })
        first.kill9()
        #expect(try eventually { try daemon.appStatus("tracker").held >= 3 }, "locationd holds for the gone app")
        let heldBefore = try daemon.appStatus("tracker").held
        // Someone watches the app meanwhile, and acknowledges what it writes: it must not take the batch from the app.
        let (watch, _, _) = try Tool.start(
            "locationctl", ["watch", "--socket", daemon.socket, "--app", "tracker", "--format", "json"], in: directory)
        defer { if watch.isRunning { kill(watch.processIdentifier, SIGKILL) } }
        #expect(try eventually { try daemon.appStatus("tracker").watchers >= 1 }, "the watch is on")

        let second = try LocationdAppProcess(socket: daemon.socket, app: "tracker", in: directory, startSuspended: true)
        #expect(try eventually { try daemon.appStatus("tracker").held == 0 }, "handed over when the app attached")
        let handedOver = heldBefore
        #expect(eventually { second.held() >= handedOver }, "the suspended app holds them with its own: \(second.output)")
        #expect(second.locations(kind: "held-restored").isEmpty && second.locations(kind: "held-foreground").isEmpty)
        second.send("active")
        #expect(eventually { second.locations(kind: "held-foreground").count >= handedOver })
        #expect(try eventually { try daemon.appStatus("tracker").unacknowledged == 0 }, "acknowledged")
        second.send("quit")
        #expect(daemon.stop() == 0)
    }

    @Test("an app that comes back asking for the background location mode gets it, though it went without it")
    func aReturningAppsOpenWinsOverTheModeItHadBeforeItWent() throws {
        let daemon = try RunningDaemon(environment: Self.quickAcquisitions)
        var first: AppConnection? = try AppConnection(socket: daemon.socket, app: "tracker", extra: #","attach":true"#)
        try first?.setState("active")
        #expect(try daemon.appStatus("tracker").backgroundLocation == false)
        first = nil
        #expect(try eventually { try daemon.appStatus("tracker").abandonedSince != nil }, "the daemon saw the app go")

        let second = try AppConnection(
            socket: daemon.socket, app: "tracker", extra: #","attach":true,"reducedInterval":1,"backgroundLocation":true"#)
        #expect(try daemon.appStatus("tracker").backgroundLocation == true, "the mode this open asked for")
        try second.setState("background")
        let status = try daemon.appStatus("tracker")
        #expect(status.state == .background, "running in the background, not suspended: \(status.state)")
        #expect(eventually { second.times.count >= 2 }, "and delivered to, not held for")
        #expect(try daemon.appStatus("tracker").held == 0)
        #expect(daemon.stop() == 0)
    }

    @Test(
        "an app's manager through locationd (DaemonLocationSource) sees the same delegate sequence as with a direct source: live, nothing while suspended, one batch on willEnterForeground, live",
        .timeLimit(.minutes(1)), .sanitizerExclusion("LocationServiceTests.MultiAppDaemonTests/swiftClientGivesTheDirectSequence()"))
    func swiftClientGivesTheDirectSequence() async throws {
        let daemon = try RunningDaemon(environment: Self.quickAcquisitions)
        // The replay acquires in windows of track time, and the walk has a point each second of it: a window
        // of a second always holds one, whenever the app is suspended (one of 0.2 s held none for most phases
        // of the suspension against the points, so whether any acquisition was held was down to timing).
        let reduced = ReducedAccuracyPolicy(interval: .seconds(2), desiredAccuracy: nil, acquisitionTimeout: .seconds(1))
        let direct = try await Self.lifecycleSequence(reduced: reduced) { _ in
            try GPXReplaySource(path: daemon.directory.file("walk.gpx"), options: GPXReplaySource.Options(pacing: .speedFactor(10)))
        }
        let throughDaemon = try await Self.lifecycleSequence(reduced: reduced) { application in
            try DaemonLocationSource(app: "client", socket: daemon.socket, policy: AppPolicy(reducedInterval: 2))
        }
        let expected = [
            "didFinishLaunching", "didBecomeActive", "live", "willResignActive", "didEnterBackground", "didSuspend",
            "willEnterForeground", "held-foreground", "didBecomeActive", "live",
        ]
        #expect(direct == expected, "the direct source: \(direct)")
        #expect(throughDaemon == expected, "through locationd: \(throughDaemon)")
        #expect(try daemon.appStatus("client").attached == false, "stopping the updates detached the app")
        #expect(try daemon.appStatus("client").abandonedSince == nil, "and it is not held for as gone")
    }

    @Test("the Swift client says once that locationd went away, connects again when it is back, and live fixes resume", .timeLimit(.minutes(1)))
    func swiftClientReconnects() async throws {
        final class Counter: LocationManagerDelegate {
            let fixes = Locked(0)
            let errors = Locked<[LocationError]>([])
            func locationManager(_ manager: LocationManager, didReceive event: LocationEvent) {
                switch event {
                case .locations(let locations, _): fixes.withLock { $0 += locations.count }
                case .error(let error): errors.withLock { $0.append(error) }
                default: break
                }
            }
        }
        let directory = TemporaryDirectory()
        var daemon = try RunningDaemon(directory: directory)
        let application = Application()
        let source = try DaemonLocationSource(app: "client", socket: daemon.socket)
        let manager = try LocationManager(source: source, application: application)
        let counter = Counter()
        manager.delegate = counter
        try application.finishLaunching()
        manager.startUpdatingLocation()
        #expect(await eventuallyAsync(20) { counter.fixes.value >= 3 })
        daemon.kill9()
        #expect(await eventuallyAsync(20) { counter.errors.value.contains { $0.code == .sourceUnavailable } })
        #expect(manager.sourceStatus == .unavailable)
        daemon = try RunningDaemon(directory: directory)
        let before = counter.fixes.value
        #expect(await eventuallyAsync(30) { counter.fixes.value >= before + 3 }, "live fixes after the restart")
        #expect(counter.errors.value.filter { $0.code == .sourceUnavailable }.count == 1, "one line for the outage: \(counter.errors.value)")
        manager.stopUpdatingLocation()
        await manager.waitForPendingDeliveries()
        #expect(daemon.stop() == 0)
    }

    /// Runs an app through active → suspended → active on `source` and returns what its delegate saw: each
    /// lifecycle message, `live` for a run of live fixes, and `held-REASON` for a batch.
    static func lifecycleSequence(
        reduced: ReducedAccuracyPolicy, source makeSource: (Application) throws -> any LocationSource
    ) async throws -> [String] {
        final class Recorder: LocationManagerDelegate {
            let seen = Locked<[String]>([])
            let live = Locked(0)
            func locationManager(_ manager: LocationManager, didReceive event: LocationEvent) {
                let name: String
                switch event {
                case .locations(let locations, .live):
                    name = "live"
                    live.withLock { $0 += locations.count }
                case .locations(_, .held(let reason)): name = "held-\(reason.rawValue)"
                case .lifecycle(let message): name = "\(message)"
                default: return
                }
                seen.withLock { if $0.last != name || name != "live" { $0.append(name) } }
            }
            var liveRuns: Int { seen.value.filter { $0 == "live" }.count }
            var liveFixes: Int { live.value }
        }
        let application = Application()
        let source = try makeSource(application)
        let manager = try LocationManager(
            source: source, application: application, configuration: LocationManagerConfiguration(reduced: reduced))
        let recorder = Recorder()
        manager.delegate = recorder
        try application.finishLaunching()
        manager.startUpdatingLocation()
        try application.transition(to: .active)
        // A run of several live fixes before the app leaves the foreground.
        #expect(await eventuallyAsync(20) { recorder.liveFixes >= 3 }, "\(recorder.liveFixes) live fixes")
        try application.transition(to: .suspended)
        // Until several background acquisitions are held (by the manager, whichever its source).
        #expect(await eventuallyAsync(20) { manager.heldCount >= 2 })
        try application.transition(to: .active)
        #expect(await eventuallyAsync(20) { recorder.liveRuns >= 2 })
        manager.stopUpdatingLocation()
        await manager.waitForPendingDeliveries()
        return recorder.seen.value
    }

    @Test("an app that went away is kept apps.keepAbandoned seconds, then dropped with its journal, and the log says so")
    func abandonedAppsExpire() throws {
        // Long enough that the app is surely seen gone and still kept: it went at most a second after the
        // whole second its time is rounded down to, so it is kept at least keep - 1 s.
        let keep = 4.0
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.file("state"), withIntermediateDirectories: true)
        let daemon = try RunningDaemon(
            directory: directory, extra: ["--journal", directory.file("state/journal")],
            environment: Self.quickAcquisitions.merging(["LOCATIOND_APPS_KEEP_ABANDONED": "\(Int(keep))"]) { $1 })
        var app: AppConnection? = try AppConnection(socket: daemon.socket, app: "shortlived", extra: #","attach":true"#)
        let journal = directory.file("state/apps/\(getuid())/shortlived.journal")
        #expect(FileManager.default.fileExists(atPath: journal))
        #expect(try daemon.listedStatus("shortlived")?.attached == true)
        app = nil

        // Gone, and still there before apps.keepAbandoned has passed.
        var seenGone: (status: DaemonStatus, at: Date)?
        #expect(try eventually(10) {
            if let status = try daemon.listedStatus("shortlived"), status.abandonedSince != nil { seenGone = (status, Date()) }
            return seenGone != nil
        }, "the daemon saw the app go")
        let gone = try #require(seenGone)
        let abandonedSince = try #require(gone.status.abandonedSince)
        let limit = try #require(RFC3339.parse(abandonedSince)?.date).addingTimeInterval(keep)
        #expect(gone.at < limit, "seen kept at \(gone.at), before the limit \(limit)")
        // Both times are written to the millisecond: kept until is since + keep within one of them.
        let keptUntil = try #require(gone.status.keptUntil)
        let until = try #require(RFC3339.parse(keptUntil)?.date)
        #expect(abs(until.timeIntervalSince(limit)) <= 0.0011, "kept until \(keptUntil), since \(abandonedSince) + \(keep) s")
        let text = try daemon.ctl(["status", "--app", "shortlived"])
        #expect(text.stdout.contains("gone since \(abandonedSince), kept until \(keptUntil)"), "\(text.stdout)")

        // Then dropped, not before the limit, with its journal, and the log says so.
        var droppedAt: Date?
        #expect(try eventually(20) {
            if try daemon.listedStatus("shortlived") == nil { droppedAt = Date() }
            return droppedAt != nil
        }, "dropped \(keep) s after it went")
        let dropped = try #require(droppedAt)
        #expect(dropped >= limit, "dropped by \(dropped), not before the limit \(limit)")
        #expect(eventually(10) { !FileManager.default.fileExists(atPath: journal) }, "its journal is removed")
        let logLine = "dropping the app shortlived of uid \(getuid()), gone since \(abandonedSince), with the "
        #expect(eventually(10) {
            daemon.logText.split(separator: "\n").contains { $0.contains(logLine) && $0.contains(/\ fix(es)? it held \(apps\.keepAbandoned\)/) }
        }, "\(daemon.logText)")
        withExtendedLifetime(app) {}
        #expect(daemon.stop() == 0)
    }

    @Test("the background location mode set while the app is gone goes on holding for it, and is the mode it gets back when it returns")
    func aModeSetWhileTheAppIsGoneTakesEffectWhenItReturns() throws {
        let daemon = try RunningDaemon(environment: Self.quickAcquisitions)
        var first: AppConnection? = try AppConnection(socket: daemon.socket, app: "tracker", extra: #","attach":true,"reducedInterval":1"#)
        try first?.setState("active")
        first = nil
        #expect(try eventually { try daemon.appStatus("tracker").abandonedSince != nil }, "the daemon saw the app go")
        let reply = try daemon.request(#"{"command":"open","app":"tracker","backgroundLocation":true}"#)
        #expect(reply["ok"] as? Bool == true, "\(reply)")
        let heldThen = try daemon.appStatus("tracker").held
        #expect(try eventually { try daemon.appStatus("tracker").held >= heldThen + 3 }, "still held for the gone app, not sent to nobody")

        let back = try AppConnection(socket: daemon.socket, app: "tracker", extra: #","attach":true"#)
        #expect(try daemon.appStatus("tracker").backgroundLocation == true, "the mode set while it was gone")
        withExtendedLifetime(back) {}
        #expect(daemon.stop() == 0)
    }

    /// libfaketime's library, from Debian's faketime package, if installed.
    static var faketimeLibrary: String? {
        let candidates = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib/arm-linux-gnueabihf", "/usr/lib"]
            .map { $0 + "/faketime/libfaketime.so.1" }
        return candidates.first { FileManager.default.fileExists(atPath: $0) }
    }

    @Test(
        "an 8-day step of locationd's wall clock (libfaketime) drops no gone app: it is kept apps.keepAbandoned seconds of the monotonic clock, with every fix it held",
        .timeLimit(.minutes(1)), .sanitizerExclusion("LocationServiceTests.MultiAppDaemonTests/aWallClockStepDropsNoGoneApp()"))
    func aWallClockStepDropsNoGoneApp() throws {
        let library = try #require(Self.faketimeLibrary, "libfaketime (Debian's faketime package; scripts/install-deps installs it)")
        let keep = 6.0
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.file("state"), withIntermediateDirectories: true)
        // The daemon's wall clock is the real one plus the offset in this file, read again at every call;
        // the monotonic clock is left alone, as a clock step leaves it.
        let offset = directory.file("faketime")
        try "+0\n".write(toFile: offset, atomically: true, encoding: .utf8)
        let environment = Self.quickAcquisitions.merging([
            "LOCATIOND_APPS_KEEP_ABANDONED": "\(Int(keep))", "LD_PRELOAD": library, "FAKETIME_TIMESTAMP_FILE": offset,
            "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        ]) { $1 }
        let daemon = try RunningDaemon(
            directory: directory, extra: ["--journal", directory.file("state/journal")], environment: environment)
        var app: AppConnection? = try AppConnection(socket: daemon.socket, app: "tracker", extra: #","attach":true"#)
        try app?.setState("suspended")
        #expect(try eventually { try daemon.appStatus("tracker").held >= 3 }, "it holds while suspended")
        app = nil
        #expect(try eventually { try daemon.appStatus("tracker").abandonedSince != nil }, "the daemon saw the app go")
        let wentAt = ContinuousClock.now
        let heldWhenGone = try daemon.appStatus("tracker").held

        // The step. An app that goes after it is gone since a time 8 days on: the daemon's clock moved.
        try "+8d\n".write(toFile: offset, atomically: true, encoding: .utf8)
        var witness: AppConnection? = try AppConnection(socket: daemon.socket, app: "witness", extra: #","attach":true"#)
        withExtendedLifetime(witness) {}
        witness = nil
        var witnessGone: Date?
        #expect(try eventually {
            witnessGone = try daemon.listedStatus("witness")?.abandonedSince.flatMap { RFC3339.parse($0)?.date }
            return witnessGone != nil
        })
        let stepped = try #require(witnessGone)
        #expect(stepped > Date().addingTimeInterval(7 * 86_400), "the daemon's wall clock is 8 days ahead: \(stepped)")

        // Kept, and holding at least what it held, until apps.keepAbandoned has passed on the monotonic clock
        // (a sweep reading the wall clock drops it at once: it runs every keep / 2 seconds).
        var held: [Int] = []
        var droppedAfter: Duration?
        #expect(try eventually(30) {
            if let status = try daemon.listedStatus("tracker") {
                held.append(status.held)
                return false
            }
            droppedAfter = ContinuousClock.now - wentAt
            return true
        }, "dropped once apps.keepAbandoned has passed")
        let after = try #require(droppedAfter)
        #expect(after >= .seconds(keep - 1), "dropped \(after) after it went, before apps.keepAbandoned (\(keep) s)")
        #expect(held.allSatisfy { $0 >= heldWhenGone }, "nothing it held was dropped meanwhile: \(heldWhenGone) then \(held.suffix(5))")
        #expect(daemon.stop() == 0)
    }

    @Test("the app default cannot be attached; an app attached and then left for another is still held for when the connection drops")
    func attachRules() throws {
        let daemon = try RunningDaemon(environment: Self.quickAcquisitions)
        let shared = try daemon.request(#"{"command":"open","app":"default","attach":true}"#)
        #expect(shared["ok"] as? Bool == false, "\(shared)")
        var client: ControlClient? = try ControlClient(path: daemon.socket)
        _ = try client?.request(.open(app: "first", attach: true))
        _ = try client?.request(.open(app: "second"))
        #expect(try daemon.appStatus("first").attached == true)
        client?.close()
        client = nil
        #expect(try eventually { try daemon.appStatus("first").abandonedSince != nil }, "its own connection dropped: it is gone")
        #expect(try daemon.appStatus("first").state == .suspended)
        #expect(try daemon.appStatus("second").abandonedSince == nil, "the other app was never attached")
        #expect(try daemon.status().state == .active, "default untouched")
    }

    @Test("an app attached by two connections is gone only when both have closed")
    func twoAttachedConnections() throws {
        let daemon = try RunningDaemon(environment: Self.quickAcquisitions)
        var first: ControlClient? = try ControlClient(path: daemon.socket)
        let second = try ControlClient(path: daemon.socket)
        _ = try first?.request(.open(app: "tracker", attach: true))
        _ = try first?.request(.watch)
        _ = try second.request(.open(app: "tracker", attach: true))
        #expect(try daemon.appStatus("tracker").watchers == 1)
        first?.close()
        first = nil
        // The daemon has handled the first one's close once it no longer counts it as a watcher.
        #expect(try eventually { try daemon.appStatus("tracker").watchers == 0 })
        let status = try daemon.appStatus("tracker")
        #expect(status.abandonedSince == nil && status.attached == true, "the other connection is still the app")
        #expect(status.state == .active)
        second.close()
        #expect(try eventually { try daemon.appStatus("tracker").abandonedSince != nil }, "the last one closed: gone")
    }

    @Test("two clients opening one new app at once share its one session; after a refused open nothing falls back to default; reading an app that does not exist creates none")
    func openRaceAndRefusal() throws {
        let daemon = try RunningDaemon()
        for round in 0..<5 {
            let replies = Locked<[Bool]>([])
            let threads = (0..<3).map { _ in
                Thread {
                    let ok = (try? ControlClient(path: daemon.socket).request(.open(app: "race\(round)")))?.text.contains(#""ok":true"#) ?? false
                    replies.withLock { $0.append(ok) }
                }
            }
            threads.forEach { $0.start() }
            #expect(eventually(10) { replies.value.count == 3 })
            #expect(replies.value == [true, true, true], "round \(round): \(replies.value)")
        }
        let client = try ControlClient(path: daemon.socket)
        let absent = #expect(throws: ControlError.self) { try client.request(.open(app: "absent", create: false)) }
        #expect(absent?.code == "no-such-app", "\(String(describing: absent))")
        #expect(absent?.message == "locationd has no app absent; create it with locationctl state --app absent active (or another state)")
        let noApp = #expect(throws: ControlError.self) { try client.request(.state(set: "background")) }
        #expect(noApp?.code == "no-app", "\(String(describing: noApp))")
        #expect(noApp?.message == "this connection acts on no app (its last open failed, or the app was removed): open one first")
        #expect(try daemon.status().state == .active, "the request after the refused open did not reach default")
        let status = try daemon.ctl(["status", "--app", "nothere"])
        #expect(status.status == 66 && status.stderr.contains("no app nothere"), "\(status.stderr)")
        // Reading an app's state neither: a typo must not leave an active app keeping the receiver running.
        let read = try daemon.ctl(["state", "--app", "typo"])
        #expect(read.status == 66 && read.stderr.contains("no app typo"), "\(read.stderr)")
        let listed = try daemon.ctl(["status", "--all", "--format", "json"])
        #expect(!listed.stdout.contains("nothere") && !listed.stdout.contains("typo"), "reading does not create an app")
        let created = try daemon.ctl(["state", "--app", "typo", "background"])
        #expect(created.status == 0, "setting a state creates it: \(created.stderr)")
    }

    @Test("an app whose state file is damaged or missing restarts suspended, keeping every fix its journal holds")
    func damagedStateFileKeepsTheFixes() throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.file("state"), withIntermediateDirectories: true)
        let extra = ["--journal", directory.file("state/journal"), "--reduced-interval", "1"]
        var daemon = try RunningDaemon(directory: directory, extra: extra, environment: Self.quickAcquisitions)
        for app in ["damaged", "missing"] {
            let result = try daemon.ctl(["state", "suspended", "--app", app])
            #expect(result.status == 0, "\(result.stderr)")
        }
        #expect(try eventually { try daemon.appStatus("damaged").held >= 5 && daemon.appStatus("missing").held >= 5 })
        #expect(daemon.stop() == 0)
        let held = try ["damaged", "missing"].map { app -> Int in
            let (_, contents) = try LocationJournal.open(path: directory.file("state/apps/\(getuid())/\(app).journal"))
            return contents.locations.count
        }
        try "garbage\n".write(toFile: directory.file("state/apps/\(getuid())/damaged.journal.state"), atomically: true, encoding: .utf8)
        try FileManager.default.removeItem(atPath: directory.file("state/apps/\(getuid())/missing.journal.state"))
        daemon = try RunningDaemon(directory: directory, extra: extra + ["--start-at", "1000"], environment: Self.quickAcquisitions)
        for (app, count) in zip(["damaged", "missing"], held) {
            let status = try daemon.appStatus(app)
            #expect(status.state == .suspended, "\(app)")
            #expect(status.held >= count, "\(app): \(status.held) of the \(count) its journal had")
        }
        let stateFiles = directory.file("state/apps/\(getuid())")
        #expect(
            daemon.logText.contains(
                "state record \(stateFiles)/damaged.journal.state is corrupt (8 bytes, not a state record); the app damaged starts suspended, holding what its journal has"),
            "\(daemon.logText)")
        #expect(
            daemon.logText.contains("the app missing's state file is missing; it starts suspended, holding what its journal has"),
            "\(daemon.logText)")
        #expect(daemon.stop() == 0)
    }

    @Test("--app takes only a valid id, and status --all does not take --app: exit 64 in one line")
    func appOptionIsChecked() throws {
        let directory = TemporaryDirectory()
        for arguments in [["status", "--app", "../etc"], ["state", "--app", ""], ["current", "--app", String(repeating: "a", count: 65)],
                          ["watch", "--app", "-x"], ["status", "--all", "--app", "x"]] {
            let result = try Tool.run("locationctl", arguments + ["--socket", directory.file("none.sock")], timeout: 20, in: directory)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(result.stdout.isEmpty)
        }
    }

    @Test(
        "over a real gpsd the receiver follows what the apps need together: continuous for an active app, off when none wants updates",
        .enabled(if: GPSDCommandTests.capturesCanBeReplayed, GPSDCommandTests.capturesMissing), .timeLimit(.minutes(2)))
    func receiverFollowsDemandOverGPSD() throws {
        let directory = TemporaryDirectory()
        let capture = try GPSDCommandTests.capture("ublox-neo-m9n-nmea.log")
        let gpsd = try FakeGPSD(capture: capture, directory: directory)
        // Each background acquisition may wait 3 s, longer than one of the capture's epochs (about 1.2 s at
        // gpsfake's 0.05 s a sentence): with the usual 0.2 s, most duty cycles would end before any fix came.
        let daemon = try RunningDaemon(
            directory: directory, source: ["--gpsd", "127.0.0.1:\(gpsd.port)"],
            environment: ["LOCATIOND_REDUCED_ACQUISITION_TIMEOUT": "3"])
        let front = try AppConnection(socket: daemon.socket, app: "front")
        let back = try AppConnection(socket: daemon.socket, app: "back", extra: #","reducedInterval":2,"backgroundLocation":true"#)
        try back.setState("background")
        #expect(eventually(30) { front.times.count >= 5 })
        #expect(try daemon.status().receiver == "continuous")

        // Nobody in the foreground: the receiver is duty-cycled at the background app's interval.
        let stopDefault = try AppConnection(socket: daemon.socket, app: "default", extra: #","updates":false"#, watch: false)
        let stopFront = try AppConnection(socket: daemon.socket, app: "front", extra: #","updates":false"#, watch: false)
        #expect(try eventually { try daemon.status().receiver == "duty-cycled every 2 s" })
        let backBefore = back.times.count
        #expect(
            eventually(30) { back.times.count >= backBefore + 2 },
            "the background app still gets its fixes: \(back.times.count - backBefore) in 30 s; \(String(describing: try? daemon.appStatus("back"))); \(daemon.logText.suffix(3000))")

        // Nobody wants updates: the receiver is off and reads nothing from gpsd.
        let stopBack = try AppConnection(socket: daemon.socket, app: "back", extra: #","updates":false"#, watch: false)
        #expect(try eventually { try daemon.status().receiver == "off" })
        let messagesAtOff = try #require(try daemon.status().receiverMessages)
        usleep(2_000_000)
        #expect(try daemon.status().receiverMessages == messagesAtOff, "WATCH off: not one message read in 2 s")

        // One app wants updates again: the receiver runs, and messages flow.
        let restart = try AppConnection(socket: daemon.socket, app: "front", extra: #","updates":true"#, watch: false)
        #expect(try eventually(30) { try daemon.status().receiverMessages ?? 0 > messagesAtOff + 5 })
        #expect(try daemon.status().receiver == "continuous")
        withExtendedLifetime((stopDefault, stopFront, stopBack, restart)) {}
        #expect(daemon.stop() == 0)
    }
}

extension RunningDaemon {
    /// The status of one app.
    func appStatus(_ app: String) throws -> DaemonStatus {
        let client = try ControlClient(path: socket)
        _ = try client.request(.open(app: app))
        return try client.request(.status).decode(DaemonStatus.self, forKey: "status")
    }

    /// The status of one app as `apps` lists it, or nil when the daemon has none (unlike ``appStatus(_:)``,
    /// which opens, and so creates, the app).
    func listedStatus(_ app: String) throws -> DaemonStatus? {
        try ControlClient.request(.apps, path: socket).decode([DaemonStatus].self, forKey: "apps").first { $0.app == app }
    }
}

/// `location-test-child --locationd-app`: an app whose manager runs through locationd, in a process of its
/// own that the test can kill.
final class LocationdAppProcess: Sendable {
    let process: Process
    private let input: FileHandle
    private let outputPath: String

    init(socket: String, app: String, in directory: TemporaryDirectory, startSuspended: Bool = false) throws {
        let pipe = Pipe()
        process = Process()
        process.executableURL = URL(fileURLWithPath: Tool.path("location-test-child"))
        // One journal per app, so that its next run restores what a killed one held.
        process.arguments = ["--locationd-app", socket, app, directory.file("\(app).app-journal"), "--reduced-interval", "1"]
            + (startSuspended ? ["--start-suspended"] : [])
        outputPath = directory.file("\(app)-\(UUID().uuidString).out")
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        // One open file for both streams: two would each write from their own offset, and a log line on
        // standard error would overwrite the delegate's lines (the test then counted held fixes as lost).
        let outputFile = FileHandle(forWritingAtPath: outputPath)
        process.standardOutput = outputFile
        process.standardError = outputFile
        process.standardInput = pipe
        input = pipe.fileHandleForWriting
        try process.run()
        guard eventually(20, { (try? String(contentsOfFile: outputPath, encoding: .utf8))?.contains("ready") == true }) else {
            throw LocationError(.sourceUnavailable, "the app did not start: \(output)")
        }
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

    /// Sends one line (a lifecycle state, or `quit`).
    func send(_ line: String) {
        try? input.write(contentsOf: Data((line + "\n").utf8))
    }

    /// The track times of the fixes delivered as `kind` (`live`, `held-foreground`, `held-restored`).
    func locations(kind: String) -> [Double] {
        locations { $0 == kind }
    }

    /// The track times of the fixes delivered as a kind that `matches`, in the order delivered.
    func locations(where matches: (String) -> Bool) -> [Double] {
        output.split(separator: "\n").compactMap { line -> [Double]? in
            guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
                object["event"] as? String == "locations", let kind = object["kind"] as? String, matches(kind)
            else { return nil }
            return object["times"] as? [Double]
        }.flatMap { $0 }
    }

    /// The held counts the app printed, oldest first (each time it asked for the foreground, or was asked).
    var heldCounts: [Int] {
        output.split(separator: "\n").compactMap { line -> Int? in
            guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
                object["event"] as? String == "held"
            else { return nil }
            return object["count"] as? Int
        }
    }

    /// The track times of every held fix delivered, whatever the batch's reason (`foreground`, `restored`,
    /// `unacknowledged`): a batch of fixes locationd resent and the app's own restored ones go as one.
    func heldLocations() -> [Double] {
        locations { $0.hasPrefix("held-") }
    }

    /// The track times of the fixes the app's manager holds now (asked, and waited for, bounded), or nil.
    func heldTimes() -> [Double]? {
        let before = heldCounts.count
        send("held")
        guard eventually(10, { self.heldCounts.count > before }) else { return nil }
        return output.split(separator: "\n").compactMap { line -> [Double]? in
            guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
                object["event"] as? String == "held"
            else { return nil }
            return object["times"] as? [Double]
        }.last
    }

    /// How many fixes the app's manager holds now (asked, and waited for, bounded).
    func held() -> Int {
        let before = heldCounts.count
        send("held")
        guard eventually(10, { self.heldCounts.count > before }) else { return -1 }
        return heldCounts.last ?? -1
    }

    func kill9() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
