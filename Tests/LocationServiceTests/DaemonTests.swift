import Foundation
import LocationControl
import LocationGPX
import LocationCore
import LocationService
import LocationTesting
import Testing

/// A running locationd replaying a generated track, with its control socket in a temporary directory.
final class RunningDaemon: Sendable {
    let directory: TemporaryDirectory
    let socket: String
    let process: Process
    let log: String

    /// Starts locationd and, unless `waitUntilAnswering` is false, waits until its socket answers.
    init(
        directory: TemporaryDirectory = TemporaryDirectory(), points: Int = 3600, source: [String]? = nil,
        extra: [String] = [], environment: [String: String] = [:], waitUntilAnswering: Bool = true
    ) throws {
        self.directory = directory
        socket = directory.file("run/control.sock")
        // A replay of a generated walk at ten fixes a second, unless another source is given.
        let source = try source ?? ["--replay", directory.track(count: points), "--speed", "10"]
        let (process, _, err) = try Tool.start(
            "locationd", source + ["--socket", socket] + extra, environment: environment, in: directory)
        self.process = process
        log = err
        guard waitUntilAnswering else { return }
        // Wait until it answers: a socket file may be left over from a killed predecessor.
        let deadline = Date().addingTimeInterval(20)
        var answering = false
        while Date() < deadline, process.isRunning, !answering {
            answering = (try? ControlClient.request(.state(set: nil), path: socket, timeout: .seconds(2))) != nil
            if !answering { usleep(20_000) }
        }
        guard process.isRunning, answering else {
            throw LocationError(.sourceUnavailable, "locationd did not start: \(logText)")
        }
    }

    /// What the daemon has written to standard error so far.
    var logText: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    /// The daemon's status.
    func status() throws -> DaemonStatus {
        try ControlClient.request(.status, path: socket).decode(DaemonStatus.self, forKey: "status")
    }

    /// Sends SIGKILL and waits until the process is gone.
    func kill9() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    func ctl(_ arguments: [String]) throws -> ToolResult {
        try Tool.run("locationctl", arguments + ["--socket", socket], in: directory)
    }

    func request(_ line: String) throws -> [String: Any] {
        let client = try ControlClient(path: socket)
        try client.send(rawLine: Array(line.utf8) + [0x0A])
        let reply = try client.readLine(timeout: .seconds(10))
        return try #require(try JSONSerialization.jsonObject(with: Data(reply)) as? [String: Any])
    }

    /// Waits until `count` watchers are connected.
    func waitForWatchers(_ count: Int) throws {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if try status().watchers >= count { return }
            usleep(20_000)
        }
        Issue.record("\(count) watchers did not connect")
    }

    /// Sends SIGTERM and waits; returns the exit status.
    func stop() -> Int32 {
        process.terminate()
        process.waitUntilExit()
        return process.terminationStatus
    }
}

@Suite("locationd and locationctl over a real socket", .serialized)
struct DaemonTests {
    @Test("the socket is owner-only and status reports the daemon's state")
    func statusAndPermissions() throws {
        let daemon = try RunningDaemon()
        let attributes = try FileManager.default.attributesOfItem(atPath: daemon.socket)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let directory = try FileManager.default.attributesOfItem(atPath: daemon.directory.file("run"))
        #expect((directory[.posixPermissions] as? Int) == 0o700)
        let text = try daemon.ctl(["status"])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("state:    active"))
        #expect(text.stdout.contains("replay walk.gpx"))
        let json = try daemon.ctl(["status", "--format", "json"])
        let status = try JSONDecoder().decode(DaemonStatus.self, from: Data(json.stdout.utf8))
        #expect(status.state == .active)
        #expect(status.policy == .high)
        #expect(status.held == 0)
        #expect(daemon.stop() == 0)
        #expect(!FileManager.default.fileExists(atPath: daemon.socket), "graceful shutdown removes the socket")
    }

    @Test("watch with no --socket and no gpsd option watches the daemon on its default socket, as current asks it")
    func watchFindsTheDaemon() throws {
        let daemon = try RunningDaemon()
        let result = try Tool.run(
            "locationctl", ["watch", "--count", "1", "--format", "json"], environment: ["LOCATIOND_SOCKET": daemon.socket],
            timeout: 30, in: daemon.directory)
        #expect(result.status == 0, "\(result.stderr)")
        let locations = try jsonObjects(result.lines).filter { $0["type"] as? String == "location" }
        #expect(locations.count == 1)
        #expect(locations.first?["source"] as? String == "walk.gpx", "the fix is the daemon's replay, not gpsd's")
    }

    @Test("current prints one location from the daemon, as text or JSON")
    func current() throws {
        let daemon = try RunningDaemon()
        let json = try daemon.ctl(["current", "--format", "json", "--timeout", "10"])
        #expect(json.status == 0, "\(json.stderr)")
        let location = try JSONDecoder().decode(Location.self, from: Data(json.stdout.utf8))
        #expect(location.isSimulated)
        #expect(location.source == "walk.gpx")
        let text = try daemon.ctl(["current"])
        #expect(text.status == 0)
        #expect(text.lines.count == 1)
        #expect(text.stdout.contains(" 52.52") && text.stdout.contains("m/s "), "\(text.stdout)")
    }

    @Test("state changes: background, suspended, then active delivers the held batch to a watcher")
    func stateAndBatch() throws {
        let daemon = try RunningDaemon(extra: ["--reduced-interval", "10", "--background-location", "off"])
        let (watcher, out, _) = try Tool.start(
            "locationctl", ["watch", "--socket", daemon.socket, "--format", "json"], in: daemon.directory)
        defer { if watcher.isRunning { watcher.terminate() } }
        try daemon.waitForWatchers(1)
        // Without a background task or the background location mode, the app is suspended as soon as
        // didEnterBackground returns, as on iOS.
        #expect(try daemon.ctl(["state", "background"]).stdout.hasPrefix("suspended"))
        let suspended = try daemon.ctl(["state", "suspended", "--format", "json"])
        #expect(suspended.stdout.contains(#""state":"suspended""#))
        // One acquisition per 10 s of track time, a second of wall time at 10×: wait until the daemon holds
        // three fixes (polling, not sleeping a fixed time that a loaded machine may not honour).
        let deadline = ContinuousClock.now + .seconds(30)
        var held = 0
        var statusAsked = ContinuousClock.now
        while held < 3, ContinuousClock.now < deadline {
            usleep(100_000)
            statusAsked = .now
            held = try JSONDecoder().decode(
                DaemonStatus.self, from: Data(try daemon.ctl(["status", "--format", "json"]).stdout.utf8)).held
        }
        try #require(held >= 3, "the suspended daemon holds its acquisitions: \(held) after 30 s")
        #expect(try daemon.ctl(["state", "active"]).status == 0)
        // Acquisitions go on until the state change lands, one per second of wall time (10 s of track time
        // at 10×): each command takes a few milliseconds, but over a second under ThreadSanitizer.
        let window = statusAsked.duration(to: .now)
        // The watcher is interrupted once it has written the return to active, which follows the batch.
        let expectedStates = ["active", "inactive", "background", "suspended", "inactive", "active"]
        func watched() throws -> [[String: Any]] {
            // Whole lines only: the last one may still be being written.
            let text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
            return try jsonObjects(text.split(separator: "\n").dropLast(text.hasSuffix("\n") ? 0 : 1).map(String.init))
        }
        func states(_ objects: [[String: Any]]) -> [String] {
            objects.filter { $0["type"] as? String == "state" }.compactMap { $0["state"] as? String }
        }
        #expect(try eventually(30) { try states(watched()).count >= expectedStates.count }, "the watcher wrote the return to active")
        watcher.interrupt()
        let ended = eventually(10) { !watcher.isRunning }
        if !ended { kill(watcher.processIdentifier, SIGKILL) }
        watcher.waitUntilExit()
        #expect(ended && watcher.terminationStatus == 130, "SIGINT ended the watch")
        let objects = try watched()
        #expect(states(objects).starts(with: expectedStates), "\(states(objects))")
        let batchIndex = try #require(objects.firstIndex { $0["type"] as? String == "batch" })
        let count = try #require(objects[batchIndex]["count"] as? Int)
        #expect(count >= held && count <= held + 1 + Int(window / .seconds(1)), "\(count) in the batch, \(held) held \(window) before")
        let delivered = try #require(objects[batchIndex]["locations"] as? [[String: Any]])
        #expect(delivered.count == count, "the batch line holds its locations")
    }

    @Test("watch --socket writes the daemon's locations as a valid GPX file")
    func watchAsGPX() throws {
        let daemon = try RunningDaemon()
        let output = daemon.directory.file("watched.gpx")
        let result = try daemon.ctl(["watch", "--format", "gpx", "--output", output, "--count", "4"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try GPXReader.readLocations(contentsOf: output).count == 4)
    }

    @Test("an invalid state change is refused with exit 64 and a clear message")
    func invalidState() throws {
        let daemon = try RunningDaemon()
        _ = try daemon.ctl(["state", "suspended"])
        let result = try daemon.ctl(["state", "background"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("cannot go from suspended to background"))
    }

    @Test("bad requests get error replies and the daemon stays up")
    func badRequests() throws {
        let daemon = try RunningDaemon()
        #expect((try daemon.request("{nope")["error"] as? [String: Any])?["code"] as? String == "bad-request")
        #expect((try daemon.request(#"{"command":"launch-missiles"}"#)["error"] as? [String: Any])?["code"] as? String == "unknown-command")
        #expect((try daemon.request(#"{"command":"state","set":"asleep"}"#)["error"] as? [String: Any])?["code"] as? String == "bad-request")
        #expect(try daemon.request(#"{"command":"state"}"#)["state"] as? String == "active")
        // A line over 64 KiB: one error reply, then the daemon closes that connection.
        let client = try ControlClient(path: daemon.socket)
        try client.send(rawLine: Array(#"{"command":"status","pad":""#.utf8) + Array(repeating: UInt8(ascii: "x"), count: 70_000) + Array("\"}\n".utf8))
        let reply = try #require(try JSONSerialization.jsonObject(with: Data(client.readLine(timeout: .seconds(10)))) as? [String: Any])
        #expect((reply["error"] as? [String: Any])?["code"] as? String == "request-too-large")
        // Closed after that reply: the next read ends with the connection, not with a timeout.
        let closed = #expect(throws: ControlError.self) { try client.readLine(timeout: .seconds(10)) }
        #expect(closed?.code == .connectionClosed, "\(String(describing: closed))")
        #expect(try daemon.request(#"{"command":"state"}"#)["state"] as? String == "active")
        #expect(daemon.process.isRunning)
    }

    @Test("many watchers at once all get the stream")
    func manyWatchers() throws {
        let daemon = try RunningDaemon()
        let watchers = try (0..<20).map { _ in
            try Tool.start("locationctl", ["watch", "--socket", daemon.socket, "--format", "json", "--count", "5"], in: daemon.directory)
        }
        for (index, (process, out, _)) in watchers.enumerated() {
            let deadline = Date().addingTimeInterval(30)
            while process.isRunning, Date() < deadline { usleep(20_000) }
            // terminationStatus of a process still running is a Foundation precondition failure, which
            // would end the whole test run: a watcher that did not finish in time is killed and reported.
            if process.isRunning {
                Issue.record("watcher \(index) did not end within 30 s of its fifth location")
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                continue
            }
            #expect(process.terminationStatus == 0)
            let lines = (try String(contentsOfFile: out, encoding: .utf8)).split(separator: "\n")
            #expect(lines.filter { $0.contains(#""type":"location""#) }.count == 5)
        }
    }

    @Test("locationctl reports an unreachable daemon with exit 69")
    func unreachable() throws {
        let directory = TemporaryDirectory()
        let result = try Tool.run("locationctl", ["status", "--socket", directory.file("none.sock")], in: directory)
        #expect(result.status == 69)
        #expect(result.stderr.contains(directory.file("none.sock")))
        let state = try Tool.run("locationctl", ["state", "--socket", directory.file("none.sock")], in: directory)
        #expect(state.status == 69)
    }

    @Test("locationd refuses a second instance on the same socket and a missing replay file")
    func startupErrors() throws {
        let daemon = try RunningDaemon()
        let track = try daemon.directory.track("other.gpx", count: 10)
        let second = try Tool.run("locationd", ["--replay", track, "--socket", daemon.socket], timeout: 20, in: daemon.directory)
        #expect(second.status == 73)
        #expect(second.stderr.contains("another locationd is listening"))
        let missing = try Tool.run("locationd", ["--replay", "/nonexistent.gpx", "--socket", daemon.directory.file("x.sock")], in: daemon.directory)
        #expect(missing.status == 66)
    }
}
