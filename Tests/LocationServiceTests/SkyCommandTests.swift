import Foundation
import GPSDTestSupport
import LocationCore
import Testing

@Suite("locationctl sky against a real gpsd", .serialized)
struct SkyCommandTests {
    /// Runs `sky --format json --count 3` with `arguments` while `observer` (a client of gpsd's own) reads
    /// gpsd's reports: the three views (exit 0 expected), and the satellite lists of gpsd's SKY reports
    /// meanwhile, the oracle (which satellites a SKY lists depends on how gpsfake paces the capture).
    static func threeViews(
        _ arguments: [String], beside observer: GPSDWatcher, in directory: TemporaryDirectory
    ) throws -> (views: [[String: Any]], oracle: [[[String: Any]]]) {
        var reports = observer.read(for: .zero)
        let (process, out, err) = try Tool.start("locationctl", ["sky"] + arguments + ["--format", "json", "--count", "3"], in: directory)
        let deadline = ContinuousClock.now + .seconds(60)
        while process.isRunning, ContinuousClock.now < deadline { reports += observer.read(for: .milliseconds(100)) }
        if process.isRunning {
            Issue.record("sky did not end within 60 s")
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
        reports += observer.read(for: .milliseconds(300))
        #expect(process.terminationStatus == 0, "\((try? String(contentsOfFile: err, encoding: .utf8)) ?? "")")
        let views = try jsonObjects(try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n").map(String.init))
        #expect(views.count == 3)
        let oracle = reports.filter { $0["class"] as? String == "SKY" }.compactMap { $0["satellites"] as? [[String: Any]] }
        try #require(!oracle.isEmpty, "gpsd sent no SKY with satellites")
        return (views, oracle)
    }

    /// Whether one of gpsd's SKY reports lists exactly `satellites` (PRN, elevation, azimuth, used; and the
    /// signal, gpsd's 0 read as none, with `signal`).
    static func gpsdReported(_ satellites: [[String: Any]], in oracle: [[[String: Any]]], signal: Bool) -> Bool {
        oracle.contains { reported in
            reported.count == satellites.count && zip(reported, satellites).allSatisfy { gpsd, ours in
                let strength = (gpsd["ss"] as? Double).flatMap { $0 > 0 ? $0 : nil }
                return gpsd["PRN"] as? Int == ours["prn"] as? Int
                    && gpsd["el"] as? Double == ours["elevation"] as? Double
                    && gpsd["az"] as? Double == ours["azimuth"] as? Double
                    && (!signal || strength == ours["signalStrength"] as? Double)
                    && gpsd["used"] as? Bool == ours["isUsed"] as? Bool
            }
        }
    }

    @Test("sky --format json gives the satellites gpsd reports for a real receiver's capture", .enabled(if: GPSDCommandTests.capturesCanBeReplayed, GPSDCommandTests.capturesMissing))
    func json() throws {
        let capture = try GPSDCommandTests.capture("ublox-neo-m9n-nmea.log")
        let directory = TemporaryDirectory()
        let gpsd = try FakeGPSD(capture: capture, directory: directory)
        // gpsd's own SKY reports, read by a client of our own beside sky: which satellites a SKY lists depends
        // on how gpsfake paces the capture, so the oracle is what this gpsd sent, not a file.
        let observer = try GPSDWatcher(port: gpsd.port)
        let (views, oracle) = try Self.threeViews(["--gpsd", "127.0.0.1:\(gpsd.port)"], beside: observer, in: directory)
        for view in views {
            #expect(view["type"] as? String == "sky")
            let satellites = try #require(view["satellites"] as? [[String: Any]])
            #expect(view["satellitesVisible"] as? Int == satellites.count)
            #expect(view["satellitesUsed"] as? Int == satellites.filter { $0["isUsed"] as? Bool == true }.count)
            // The same satellites, numbers and positions as one of gpsd's own SKY reports of the capture.
            #expect(Self.gpsdReported(satellites, in: oracle, signal: true), "a view gpsd never reported: \(view)")
        }
        #expect(views.contains { ($0["satellites"] as? [[String: Any]])?.contains { $0["constellation"] as? String == "glonass" } == true })
    }

    @Test("sky as text: a heading with the counts and DOPs, then one line per satellite, used ones first", .enabled(if: GPSDCommandTests.capturesCanBeReplayed, GPSDCommandTests.capturesMissing))
    func text() throws {
        let capture = try GPSDCommandTests.capture("ublox-neo-m9n-nmea.log")
        let directory = TemporaryDirectory()
        let gpsd = try FakeGPSD(capture: capture, directory: directory)
        let result = try Tool.run("locationctl", ["sky", "--gpsd", "127.0.0.1:\(gpsd.port)", "--count", "1"], timeout: 60, in: directory)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.lines
        try #require(lines.count >= 3, "\(result.stdout)")
        #expect(lines[0].contains(" satellites used") && lines[0].contains("HDOP"), "\(lines[0])")
        #expect(lines[1] == "  PRN  sys   elev   azim  signal  used")
        let used = lines.dropFirst(2).map { $0.hasSuffix("yes") }
        #expect(used == used.sorted { $0 && !$1 }, "used satellites first: \(result.stdout)")
        #expect(!result.stdout.contains("\u{1B}"), "no terminal codes when the output is not a terminal")
    }

    @Test("sky goes on through gpsd's restart: one line says gpsd went away, and views come again from the new gpsd", .enabled(if: GPSDCommandTests.capturesCanBeReplayed, GPSDCommandTests.capturesMissing))
    func reconnects() throws {
        let capture = try GPSDCommandTests.capture("ublox-neo-m9n-nmea.log")
        let directory = TemporaryDirectory()
        var gpsd: FakeGPSD? = try FakeGPSD(capture: capture, directory: directory)
        let port = try #require(gpsd?.port)
        let (process, out, err) = try Tool.start(
            "locationctl", ["sky", "--gpsd", "127.0.0.1:\(port)", "--format", "json", "--gpsd-max-reconnect-delay", "0.5"], in: directory)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        func views() -> Int { ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").split(separator: "\n").count }
        func errors() -> String { (try? String(contentsOfFile: err, encoding: .utf8)) ?? "" }
        #expect(eventually(60) { views() >= 1 }, "\(errors())")
        gpsd = nil
        #expect(eventually(30) { errors().contains("reconnecting") }, "\(errors())")
        let before = views()
        gpsd = try FakeGPSD(capture: capture, directory: directory, port: port)
        #expect(eventually(60) { views() > before }, "views from the restarted gpsd: \(errors())")
        #expect(process.isRunning)
        kill(process.processIdentifier, SIGINT)
        process.waitUntilExit()
        #expect(process.terminationStatus == 130)
        #expect(errors().components(separatedBy: "reconnecting").count - 1 == 1, "one line for the outage: \(errors())")
    }

    @Test("sky through locationd shows its gpsd's satellites, each as gpsd reported it; a locationd replaying GPX has none to show (69, one line)", .enabled(if: GPSDCommandTests.capturesCanBeReplayed, GPSDCommandTests.capturesMissing))
    func throughTheDaemon() throws {
        let capture = try GPSDCommandTests.capture("ublox-neo-m9n-nmea.log")
        let directory = TemporaryDirectory()
        let gpsd = try FakeGPSD(capture: capture, directory: directory)
        let observer = try GPSDWatcher(port: gpsd.port)
        let daemon = try RunningDaemon(directory: directory, source: ["--gpsd", "127.0.0.1:\(gpsd.port)"], extra: ["--journal", directory.file("held.journal")])
        let (views, oracle) = try Self.threeViews(["--socket", daemon.socket], beside: observer, in: directory)
        for view in views {
            let satellites = try #require(view["satellites"] as? [[String: Any]])
            #expect(Self.gpsdReported(satellites, in: oracle, signal: false), "a view gpsd never reported: \(view)")
        }

        let replaying = try RunningDaemon(directory: TemporaryDirectory(), points: 50)
        let none = try Tool.run("locationctl", ["sky", "--socket", replaying.socket, "--count", "1"], timeout: 30, in: directory)
        #expect(none.status == 69, "\(none.stderr)")
        #expect(none.stderr.contains("reports no satellites") && none.stderr.split(separator: "\n").count == 1, "\(none.stderr)")
    }

    @Test("sky against a peer that is not gpsd (an ssh banner) exits 69 saying so, instead of reconnecting for ever")
    func notGPSD() throws {
        let directory = TemporaryDirectory()
        let server = try LoopbackTCP.listen()
        let peer = Thread {
            // Every connection gets a banner, then is closed.
            for _ in 0..<20 {
                let client = accept(server.fd, nil, nil)
                guard client >= 0 else { return }
                _ = "SSH-2.0-OpenSSH_9.6\r\n".withCString { send(client, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
                close(client)
            }
        }
        peer.start()
        defer {
            shutdown(server.fd, Int32(SHUT_RDWR))
            close(server.fd)
        }
        let result = try Tool.run("locationctl", ["sky", "--gpsd", "127.0.0.1:\(server.port)", "--count", "1"], timeout: 30, in: directory)
        #expect(result.status == 69, "\(result.stderr)")
        #expect(result.stderr.contains("not speaking gpsd") && result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
    }

    @Test("sky with no gpsd at the address exits 69 in one line naming it")
    func unreachable() throws {
        let directory = TemporaryDirectory()
        let port = try LoopbackTCP.freePort()
        let result = try Tool.run("locationctl", ["sky", "--gpsd", "127.0.0.1:\(port)", "--count", "1"], timeout: 30, in: directory)
        #expect(result.status == 69)
        #expect(result.stderr.split(separator: "\n").count == 1 && result.stderr.contains("127.0.0.1:\(port)"), "\(result.stderr)")
    }
}
