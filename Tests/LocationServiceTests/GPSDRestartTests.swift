import Foundation
import GPSDTestSupport
import LocationControl
import LocationCore
import LocationTesting
import Testing

/// gpsd killed and started again, round after round, under one `locationctl watch --gpsd` and under one
/// locationd: nothing crashes, no fix is delivered twice or out of order, each outage is reported exactly
/// once, and fixes flow again within the reconnection backoff cap plus one second of gpsd accepting
/// connections again.
///
/// The receiver is ``NMEAFeedServer``, which keeps running while gpsd is down, so fix times increase
/// across the whole run as they would with a real receiver.
///
/// CI runs 20 rounds per test (about 30 s each), 6 under a sanitizer (which checks the code paths; the many
/// rounds that hunt for an unlucky moment run in the normal build). For a longer run set `LOCATION_STRESS_ROUNDS`:
///
///     LOCATION_STRESS_ROUNDS=200 swift test --no-parallel --filter GPSDRestartTests
@Suite(
    "gpsd restarted again and again under a watch and a daemon", .serialized,
    .enabled(if: GPSDProcess.executable != nil, "gpsd is not installed (apt-get install gpsd)"))
struct GPSDRestartTests {
    /// Rounds per test: 20 (6 under a sanitizer), or `LOCATION_STRESS_ROUNDS`.
    static let rounds =
        ProcessInfo.processInfo.environment["LOCATION_STRESS_ROUNDS"].flatMap { Int($0) }.map { max(1, $0) } ?? (Sanitizer.active == nil ? 20 : 6)
    /// Generous: a round takes about 2 s.
    static let minutesAllowed = max(3, rounds * 10 / 60 + 2)
    /// The backoff used: 0.1 s doubling to 1 s.
    static let cap = 1.0
    static let backoffFlags = ["--gpsd-reconnect-delay", "0.1", "--gpsd-max-reconnect-delay", String(cap)]

    @Test("locationctl watch --gpsd rides through gpsd restarts", .timeLimit(.minutes(minutesAllowed)))
    func watchThroughRestarts() throws {
        try Self.withRestartableGPSD { gpsd, directory in
            try Self.withTool(
                "locationctl", ["watch", "--gpsd", "127.0.0.1:\(gpsd.port)", "--format", "json"] + Self.backoffFlags,
                in: directory
            ) { watcher, out, err in
                let log = EventLog(path: out)
                let recoveries = try Self.restart(gpsd, log: log) { watcher.isRunning }
                watcher.interrupt()
                watcher.waitUntilExit()
                let stderr = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
                #expect(watcher.terminationStatus == 130, "locationctl watch ended by SIGINT, or badly: \(stderr)")
                Self.check(log, port: gpsd.port)
                Self.summarise("watch", recoveries)
            }
        }
    }

    @Test("locationd rides through gpsd restarts; its watchers see each outage once", .timeLimit(.minutes(minutesAllowed)))
    func daemonThroughRestarts() throws {
        try Self.withRestartableGPSD { gpsd, directory in
            let socket = directory.file("run/control.sock")
            try Self.withTool(
                "locationd", ["--gpsd", "127.0.0.1:\(gpsd.port)", "--socket", socket] + Self.backoffFlags, in: directory
            ) { daemon, _, daemonErr in
                let deadline = Date().addingTimeInterval(20)
                while daemon.isRunning, Date() < deadline,
                    (try? ControlClient.request(.state(set: nil), path: socket, timeout: .seconds(2))) == nil
                {
                    usleep(20_000)
                }
                try #require(daemon.isRunning, "locationd did not start: \((try? String(contentsOfFile: daemonErr, encoding: .utf8)) ?? "")")
                try Self.withTool("locationctl", ["watch", "--socket", socket, "--format", "json"], in: directory) { watcher, out, _ in
                    let log = EventLog(path: out)
                    let recoveries = try Self.restart(gpsd, log: log) { daemon.isRunning && watcher.isRunning }

                    // The daemon's own view after the last recovery: connected, with a fresh fix.
                    let status = try Tool.run("locationctl", ["status", "--socket", socket, "--format", "json"], in: directory)
                    #expect(status.status == 0)
                    #expect(status.stdout.contains(#""sourceStatus":"has-fix""#), "\(status.stdout)")
                    let current = try Tool.run("locationctl", ["current", "--socket", socket, "--format", "json"], in: directory)
                    #expect(current.status == 0, "\(current.stderr)")
                    let fix = try? JSONDecoder().decode(Location.self, from: Data(current.stdout.utf8))
                    #expect(fix.map { $0.timestamp >= log.lastTimestamp! } == true, "current gives the newest fix: \(current.stdout)")

                    watcher.interrupt()
                    watcher.waitUntilExit()
                    #expect(watcher.terminationStatus == 130, "SIGINT ended the watch")
                    daemon.terminate()
                    daemon.waitUntilExit()
                    #expect(daemon.terminationStatus == 0, "locationd shut down cleanly")
                    Self.check(log, port: gpsd.port)
                    Self.summarise("locationd", recoveries)
                }
            }
        }
    }

    /// Runs `body` with a gpsd already accepting connections, reading a fresh ``NMEAFeedServer``, and a
    /// temporary directory; ends gpsd and the feed afterwards, however `body` ends.
    static func withRestartableGPSD(_ body: (GPSDProcess, TemporaryDirectory) throws -> Void) throws {
        let feed = try NMEAFeedServer()
        let gpsd = try GPSDProcess(feedPort: feed.port)
        defer {
            gpsd.stop()
            feed.stop()
        }
        try gpsd.start()
        try body(gpsd, TemporaryDirectory())
    }

    /// Runs `body` with one of the built executables started (its process and the files of its standard
    /// output and error); terminates it afterwards if it is still running.
    static func withTool(
        _ name: String, _ arguments: [String], in directory: TemporaryDirectory,
        _ body: (Process, _ stdout: String, _ stderr: String) throws -> Void
    ) throws {
        let (process, out, err) = try Tool.start(name, arguments, in: directory)
        defer {
            if process.isRunning {
                process.terminate()
                process.waitUntilExit()
            }
        }
        try body(process, out, err)
    }

    /// Kills gpsd (SIGKILL and SIGTERM in turn) and starts it again, ``rounds`` times, checking each
    /// round as it goes; returns each recovery time: from gpsd accepting connections to the next fix.
    static func restart(_ gpsd: GPSDProcess, log: EventLog, alive: () -> Bool) throws -> [Double] {
        var recoveries: [Double] = []
        // The same gaps every run: reconnection attempts fail at different points of the backoff.
        var generator = SplitMix64(seed: 2947)
        for round in 1...rounds {
            let before = log.locationCount
            try #require(
                log.wait(timeout: 20) { $0.locationCount >= before + 3 },
                "round \(round): fixes flow before gpsd is killed")
            gpsd.kill(round.isMultiple(of: 2) ? SIGTERM : SIGKILL)
            try #require(
                log.wait(timeout: 20) { $0.errorCount >= round },
                "round \(round): the outage is reported")
            // Taken after the error: the epoch that was being merged when gpsd died comes just before it.
            let lastFix = try #require(log.lastTimestamp)
            usleep(UInt32.random(in: 0...1_500_000, using: &generator))
            let accepting = try gpsd.start()
            let recovered = log.wait(timeout: 20) { ($0.lastTimestamp ?? .distantPast) > lastFix }
            let recovery = accepting.duration(to: .now) / .seconds(1)
            try #require(recovered, "round \(round): fixes flow again after gpsd restarted")
            // A sanitizer slows every process several times over: the figure is printed (summarise), not
            // asserted there.
            if Sanitizer.speedUnderLoadIsMeaningful {
                #expect(
                    recovery <= cap + 1, "round \(round): first fix \(recovery) s after gpsd accepted connections again")
            }
            try #require(alive(), "round \(round): still running")
            recoveries.append(recovery)
        }
        return recoveries
    }

    /// What must hold over the whole run: every fix a real epoch of the feed, strictly increasing times,
    /// and exactly one error per restart, saying that gpsd closed the connection.
    static func check(_ log: EventLog, port: Int) {
        log.poll()
        #expect(log.events.allSatisfy { $0.type != "unreadable" }, "every line is JSON")
        let times = log.events.compactMap(\.timestamp)
        #expect(times.count >= rounds * 3)
        if let index = times.indices.dropLast().first(where: { times[$0] >= times[$0 + 1] }) {
            Issue.record("fix times go from \(times[index]) to \(times[index + 1]): delivered twice or out of order")
        }
        let offGrid = times.filter { time in
            let tenths = (time.timeIntervalSince1970 - Double(NMEAFeedServer.baseSeconds)) * Double(NMEAFeedServer.rate)
            return abs(tenths - tenths.rounded()) > 1e-3
        }
        #expect(offGrid.isEmpty, "fix times not of the feed: \(offGrid.prefix(3))")
        let errors = log.events.compactMap(\.error)
        #expect(errors.count == rounds, "one error per restart: \(errors.count) for \(rounds) restarts")
        let unexpected = errors.filter { !$0.hasPrefix("source-failed: gpsd at 127.0.0.1:\(port) closed the connection") }
        #expect(unexpected.isEmpty, "\(unexpected.prefix(3))")
    }

    static func summarise(_ name: String, _ recoveries: [Double]) {
        let sorted = recoveries.sorted()
        guard !sorted.isEmpty else { return }
        let median = String(format: "%.2f", sorted[sorted.count / 2]), longest = String(format: "%.2f", sorted.last!)
        print("\(name): \(sorted.count) gpsd restarts; first fix after gpsd accepted again: median \(median) s, max \(longest) s (limit \(cap + 1) s\(Sanitizer.speedUnderLoadIsMeaningful ? "" : ", not asserted under \(Sanitizer.active ?? "")"))")
    }
}
