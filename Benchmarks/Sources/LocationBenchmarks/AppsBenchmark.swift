import Foundation
import GPSDTestSupport
import LocationControl

#if canImport(Glibc)
    import Glibc
#endif

/// locationd serving many apps, as their users feel it: `locationctl current` for one app alone and while 50
/// other apps watch (whole-process wall time); the daemon's resident memory with one session and with 100
/// idle ones; and the daemon's CPU over the same gpsd feed with one foreground app alone and with ten
/// background apps beside it.
package enum AppsBenchmark {
    package struct Result: Sendable {
        /// Median seconds of `locationctl current` with the default app alone.
        package var currentAlone: Double
        /// The same while 50 other apps watch.
        package var currentWith50Watching: Double
        /// Daemon RSS (KiB) with the default app only, then with 100 more idle sessions.
        package var rssOneSessionKiB: Int
        package var rss100SessionsKiB: Int
        /// Daemon CPU seconds per minute of feed: one foreground app, then the same with 10 background apps.
        package var cpuForegroundAlone: Double?
        package var cpuWith10Background: Double?
        package var cpuNote: String?
        package var seconds: Double
    }

    package static func run(runs: Int, seconds: Double) async throws -> Result {
        guard let locationctl = SiblingExecutable.path("locationctl"), let locationd = SiblingExecutable.path("locationd") else {
            throw BenchError("locationctl and locationd are not built next to locationbench (swift build -c release)")
        }
        let directory = NSTemporaryDirectory() + "locationbench-apps-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let track = directory + "/walk.gpx"
        try writeTrack(track, points: 3600)
        let socket = directory + "/control.sock"
        let environment = ["LOCATIOND_APPS_MAX": "200"]

        // 1. current, alone and with 50 watching apps.
        var result = Result(
            currentAlone: 0, currentWith50Watching: 0, rssOneSessionKiB: 0, rss100SessionsKiB: 0, seconds: seconds)
        do {
            let daemon = try ChildProcess([locationd, "--replay", track, "--loop", "--socket", socket], environment: environment)
            defer { daemon.stop() }
            let current = [locationctl, "current", "--socket", socket, "--timeout", "5"]
            try await waitUntilAnswering(current)
            result.currentAlone = try median(current, runs: runs)
            let watchers = try (0..<50).map { try Watcher(socket: socket, app: "watcher\($0)") }
            defer { for watcher in watchers { watcher.close() } }
            try await Task.sleep(for: .seconds(1))
            result.currentWith50Watching = try median(current, runs: runs)
            let seen = watchers.reduce(0) { $0 + $1.lines }
            guard seen > 50 else { throw BenchError("the 50 watching apps received only \(seen) lines") }
        }

        // 2. Resident memory with one session, then 100 idle ones.
        do {
            let daemon = try ChildProcess([locationd, "--replay", track, "--loop", "--socket", socket], environment: environment)
            defer { daemon.stop() }
            try await waitUntilAnswering([locationctl, "status", "--socket", socket])
            try await Task.sleep(for: .seconds(2))
            result.rssOneSessionKiB = rss(daemon.pid)
            for index in 0..<100 {
                let client = try ControlClient(path: socket)
                _ = try client.request(.open(app: "idle\(index)", policy: AppPolicy(updates: false)))
                client.close()
            }
            try await Task.sleep(for: .seconds(2))
            result.rss100SessionsKiB = rss(daemon.pid)
        }

        // 3. CPU over one gpsd feed: one foreground app, then ten background apps beside it.
        guard GPSFake.isInstalled else {
            result.cpuNote = "gpsfake is not installed (apt-get install gpsd gpsd-clients python3-gps)"
            return result
        }
        let fake = try GPSFake.start(epochs: Int(10 * (2 * seconds + 30)))
        defer { fake.stop() }
        let daemon = try ChildProcess([locationd, "--gpsd", "127.0.0.1:\(fake.port)", "--socket", socket], environment: environment)
        defer { daemon.stop() }
        try await waitUntilAnswering([locationctl, "current", "--socket", socket, "--timeout", "5"])
        let foreground = try Watcher(socket: socket, app: "default")
        defer { foreground.close() }
        try await Task.sleep(for: .seconds(1))
        let alone = try await cpu(of: daemon.pid, for: seconds)
        let background = try (0..<10).map {
            try Watcher(socket: socket, app: "background\($0)", extra: #","reducedInterval":60,"backgroundLocation":true"#, state: "background")
        }
        defer { for watcher in background { watcher.close() } }
        try await Task.sleep(for: .seconds(1))
        let together = try await cpu(of: daemon.pid, for: seconds)
        result.cpuForegroundAlone = alone * 60 / seconds
        result.cpuWith10Background = together * 60 / seconds
        return result
    }

    /// A GPX track of `points` fixes one second apart.
    private static func writeTrack(_ path: String, points: Int) throws {
        var text = #"<?xml version="1.0" encoding="UTF-8"?><gpx version="1.1" creator="locationbench" xmlns="http://www.topografix.com/GPX/1/1"><trk><trkseg>"#
        let start = 1_767_225_600.0
        let formatter = ISO8601DateFormatter()
        for index in 0..<points {
            let time = formatter.string(from: Date(timeIntervalSince1970: start + Double(index)))
            text += #"<trkpt lat="\#(50 + Double(index) * 1e-5)" lon="8"><time>\#(time)</time></trkpt>"#
        }
        text += "</trkseg></trk></gpx>\n"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    private static func waitUntilAnswering(_ command: [String]) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if (try? ProcessMeasurement.run(command, measureRSS: false, discardErrors: true))?.status == 0 { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw BenchError("\(command.joined(separator: " ")) never succeeded")
    }

    private static func median(_ command: [String], runs: Int) throws -> Double {
        var times: [Double] = []
        for _ in 0..<max(1, runs) {
            let run = try ProcessMeasurement.run(command, measureRSS: false)
            guard run.status == 0 else { throw BenchError("\(command[1]) exited with status \(run.status)") }
            times.append(run.seconds)
        }
        return Statistics.median(times)
    }

    /// VmRSS of a process, in KiB.
    private static func rss(_ pid: pid_t) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    /// CPU seconds (user + system) a process uses over `seconds` of wall time.
    private static func cpu(of pid: pid_t, for seconds: Double) async throws -> Double {
        func total() -> Double {
            let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
            // Fields after the command name (which may hold spaces) start after the last ')'.
            guard let close = stat.lastIndex(of: ")") else { return 0 }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
            return ((Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)) / ticks
        }
        let before = total()
        try await Task.sleep(for: .seconds(seconds))
        return total() - before
    }

    /// One app's connection: opens the app, watches it, and drains its lines on a thread of its own.
    final class Watcher: Sendable {
        let client: ControlClient
        private let count = Locked(0)

        init(socket: String, app: String, extra: String = "", state: String? = nil) throws {
            client = try ControlClient(path: socket)
            try client.send(rawLine: Array(#"{"command":"open","app":"\#(app)"\#(extra)}"#.utf8) + [0x0A])
            _ = try client.readLine(timeout: .seconds(10))
            if let state { _ = try client.request(.state(set: state)) }
            _ = try client.request(.watch)
            let client = self.client
            let count = self.count
            Thread.detachNewThread {
                while (try? client.readLine(timeout: nil)) != nil { count.withLock { $0 += 1 } }
            }
        }

        var lines: Int { count.value }

        func close() { client.close() }
    }
}
