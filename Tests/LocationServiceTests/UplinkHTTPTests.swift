import Foundation
import GPSDTestSupport
import LocationControl
import LocationCore
import LocationTesting
import Testing

/// locationd's HTTP uplinks against stand-ins that follow the receivers' documented rules: Traccar's OsmAnd
/// JSON endpoint (200 once stored, 400 for a body it cannot read, 404 for an unknown device, 503 while it is
/// unavailable) and the OwnTracks Recorder's `/pub` (200 with a JSON array).
@Suite("HTTP uplinks deliver every fix to Traccar and OwnTracks stand-ins", .serialized)
struct UplinkHTTPTests {
    static let epoch = UplinkBrokerTests.epoch

    /// A stand-in HTTP receiver (python3's http.server, HTTP/1.1 with keep-alive), run for one test.
    ///
    /// `plan` says how it answers: `unavailable` (the first N requests get 503), `hang` (the first N get no
    /// answer at all), `delay` (seconds before each answer), `refuse` (fix times, seconds of the walk, answered 400 as a body Traccar cannot use
    /// is), `devices` (Traccar's known device ids; others get 404), `tls` (`cert` and `key`: HTTPS with that server
    /// certificate, through python3's ssl, which is OpenSSL). Each request is logged as a JSON line.
    final class StandIn: Sendable {
        let port: Int
        let process: ChildProcess
        let log: String

        static let script = #"""
            import calendar, http.server, json, sys, threading, time, urllib.parse
            mode, port_file, log_path, plan = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
            lock = threading.Lock()
            count = [0]

            def decide(handler, body, n):
                if n <= plan.get("hang", 0):
                    return None, ""
                if n <= plan.get("hang", 0) + plan.get("unavailable", 0):
                    return 503, "unavailable"
                try:
                    message = json.loads(body)
                except ValueError:
                    return 400, "not JSON"
                if mode == "traccar":
                    location = message.get("location") or {}
                    coords = location.get("coords") or {}
                    if any(not isinstance(coords.get(k), (int, float)) for k in
                           ("latitude", "longitude", "accuracy", "speed", "heading", "altitude")):
                        return 400, "coords"
                    if message.get("device_id") not in plan.get("devices", []):
                        return 404, "unknown\r\n  device\n"
                    stamp = location.get("timestamp", "")
                    tst = calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S"))
                    if tst in plan.get("refuse", []):
                        return 400, "refused"
                    return 200, ""
                query = urllib.parse.parse_qs(urllib.parse.urlparse(handler.path).query)
                user = (query.get("u") or [handler.headers.get("X-Limit-U")])[0]
                device = (query.get("d") or [handler.headers.get("X-Limit-D")])[0]
                if urllib.parse.urlparse(handler.path).path != "/pub" or not user or not device:
                    return 404, "not found"
                if message.get("_type") not in ("location", "transition") or "tst" not in message:
                    return 400, "not a location"
                return 200, "[]"

            class Handler(http.server.BaseHTTPRequestHandler):
                protocol_version = "HTTP/1.1"
                disable_nagle_algorithm = True
                def log_message(self, *args):
                    pass
                def do_POST(self):
                    body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                    with lock:
                        count[0] += 1
                        n = count[0]
                    status, reply = decide(self, body, n)
                    time.sleep(plan.get("delay", 0))
                    if status is None:
                        time.sleep(3600)
                        return
                    with lock, open(log_path, "a") as log:
                        log.write(json.dumps({"status": status, "path": self.path, "body": body.decode("utf-8", "replace"),
                                              "user": self.headers.get("X-Limit-U"), "type": self.headers.get("Content-Type")}) + "\n")
                    data = reply.encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)

            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
            server.daemon_threads = True
            if "tls" in plan:
                import ssl
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                context.load_cert_chain(plan["tls"]["cert"], plan["tls"]["key"])
                server.socket = context.wrap_socket(server.socket, server_side=True)
            with open(port_file + ".tmp", "w") as f:
                f.write(str(server.server_address[1]))
            import os
            os.rename(port_file + ".tmp", port_file)
            server.serve_forever()
            """#

        init(_ mode: String, plan: [String: Any], in directory: TemporaryDirectory) throws {
            let script = directory.file("stand-in.py")
            try Self.script.write(toFile: script, atomically: true, encoding: .utf8)
            let portFile = directory.file("stand-in.port")
            log = directory.file("stand-in.log")
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            let planText = String(decoding: try JSONSerialization.data(withJSONObject: plan), as: UTF8.self)
            let process = try ChildProcess(["python3", script, mode, portFile, log, planText])
            self.process = process
            let deadline = Date().addingTimeInterval(20)
            var port: Int?
            while Date() < deadline, process.reap() == nil, port == nil {
                port = (try? String(contentsOfFile: portFile, encoding: .utf8)).flatMap { Int($0) }
                if port == nil { usleep(20_000) }
            }
            guard let port else {
                _ = process.stop()
                throw LocationError(.sourceUnavailable, "the HTTP stand-in did not start")
            }
            self.port = port
        }

        deinit {
            _ = process.stop()
        }

        /// Every request answered so far: its status and its body as JSON.
        var requests: [(status: Int, body: [String: Any], path: String, user: String?, type: String?)] {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { line in
                guard let entry = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    let status = entry["status"] as? Int, let body = entry["body"] as? String
                else { return nil }
                let object = (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]) ?? [:]
                return (status, object, entry["path"] as? String ?? "", entry["user"] as? String, entry["type"] as? String)
            }
        }

        /// The fix times (seconds since 1970) of the fixes the stand-in took (answered 200), in arrival order.
        var takenTimes: [Int] {
            requests.filter { $0.status == 200 && $0.body["_type"] as? String != "transition" }.compactMap { request in
                if let tst = request.body["tst"] as? Int { return tst }
                guard let location = request.body["location"] as? [String: Any],
                    let stamp = location["timestamp"] as? String, let date = RFC3339.parse(stamp)?.date
                else { return nil }
                return Int(date.timeIntervalSince1970.rounded(.down))
            }
        }
    }

    static func uplink(_ daemon: RunningDaemon) throws -> UplinkStatus? {
        try daemon.status().uplinks?.first
    }

    @Test(
        "Traccar answering 503 at first, then 400 for two fixes it cannot use: every other fix arrives once, in order; the two are dropped, counted and logged once",
        .timeLimit(.minutes(2)))
    func traccarUnavailableThenRefusingTwo() throws {
        let directory = TemporaryDirectory()
        let refused = [Self.epoch + 40, Self.epoch + 41]
        let standIn = try StandIn("traccar", plan: ["unavailable": 3, "devices": ["pi"], "refuse": refused], in: directory)
        let count = 120
        let daemon = try RunningDaemon(
            directory: directory,
            source: ["--replay", try UplinkBrokerTests.track(directory, "walk.gpx", count: count, from: 0), "--speed", "50"],
            extra: [
                "--journal", try UplinkBrokerTests.stateFolder(directory) + "/journal",
                "--uplink", "http://127.0.0.1:\(standIn.port)/?format=traccar&id=pi",
            ])
        #expect(try eventually(60) { try Self.uplink(daemon)?.acknowledged == count - refused.count }, "every other fix is taken")
        let times = standIn.takenTimes
        #expect(times == (0..<count).map { Self.epoch + $0 }.filter { !refused.contains($0) }, "once each, oldest first: \(times.count) taken")
        #expect(standIn.requests.prefix(3).allSatisfy { $0.status == 503 }, "the first three met a server that was unavailable")
        #expect(standIn.requests.allSatisfy { $0.type == "application/json" })
        let status = try #require(try Self.uplink(daemon))
        #expect(status.droppedRefused == refused.count)
        #expect(status.queued == 0)
        #expect(status.lastError == nil, "the 503s were a passing problem: \(status.lastError ?? "")")
        let refusals = daemon.logText.split(separator: "\n").filter { $0.contains("refused the fix") }
        #expect(refusals.count == 1, "the first refusal with 400 is logged, the second counted: \(refusals)")
        #expect(daemon.logText.contains("503"), "the unavailable server was logged")
    }

    @Test(
        "Traccar not knowing the device (404) drops nothing: the fixes wait, status says why and when the next attempt is",
        .timeLimit(.minutes(2)))
    func anUnknownDeviceDropsNothing() throws {
        let directory = TemporaryDirectory()
        let standIn = try StandIn("traccar", plan: ["devices": ["another"]], in: directory)
        let count = 30
        let daemon = try RunningDaemon(
            directory: directory,
            source: ["--replay", try UplinkBrokerTests.track(directory, "walk.gpx", count: count, from: 0), "--speed", "50"],
            extra: ["--uplink", "http://127.0.0.1:\(standIn.port)/?format=traccar&id=pi"])
        #expect(try eventually(30) { try Self.uplink(daemon)?.queued == count }, "every fix waits")
        let status = try #require(try Self.uplink(daemon))
        #expect(status.droppedRefused == 0)
        #expect(status.acknowledged == 0)
        #expect(status.lastError?.contains("404") == true, "\(status.lastError ?? "no error")")
        #expect(status.lastError?.contains("(unknown device)") == true, "the body's line breaks are spaces: \(status.lastError ?? "")")
        #expect(status.lastError?.contains("identifier pi") == true, "the hint names the device")
        #expect(status.nextAttempt != nil, "status says when the next attempt is")
        #expect(standIn.requests.allSatisfy { $0.status == 404 })
        #expect(Set(standIn.takenTimes).isEmpty)
    }

    @Test(
        "a server that accepts and never answers is given up on after the uplink's timeout, and the fix goes again",
        .timeLimit(.minutes(2)))
    func aHangingServerTimesOut() throws {
        let directory = TemporaryDirectory()
        let standIn = try StandIn("traccar", plan: ["hang": 1, "devices": ["pi"]], in: directory)
        let count = 20
        let daemon = try RunningDaemon(
            directory: directory,
            source: ["--replay", try UplinkBrokerTests.track(directory, "walk.gpx", count: count, from: 0), "--speed", "50"],
            extra: ["--uplink", "http://127.0.0.1:\(standIn.port)/?format=traccar&id=pi&timeout=1"])
        #expect(try eventually(60) { try Self.uplink(daemon)?.acknowledged == count }, "every fix arrives after the hung request")
        #expect(standIn.takenTimes == (0..<count).map { Self.epoch + $0 })
        #expect(daemon.logText.contains("timed out") || daemon.logText.contains("Timeout"), "the timeout was logged: \(daemon.logText)")
    }

    @Test(
        "https:// to a TLS server: with the CA that signed its certificate every fix arrives in order; with another CA none is sent and status says why",
        .timeLimit(.minutes(2)))
    func httpsWithTheRightAndAWrongCA() throws {
        let directory = TemporaryDirectory()
        let certificates = try TestCertificates(in: directory.file("tls"))
        let tls = ["cert": certificates.serverCertificate, "key": certificates.serverKey]
        let standIn = try StandIn("traccar", plan: ["devices": ["pi", "car"], "tls": tls], in: directory)
        let count = 30
        let daemon = try RunningDaemon(
            directory: directory,
            source: ["--replay", try UplinkBrokerTests.track(directory, "walk.gpx", count: count, from: 0), "--speed", "30"],
            extra: [
                "--journal", try UplinkBrokerTests.stateFolder(directory) + "/journal",
                "--uplink", "https://localhost:\(standIn.port)/?format=traccar&id=pi&ca-file=\(certificates.caFile)",
                "--uplink", "https://127.0.0.1:\(standIn.port)/?format=traccar&id=car&ca-file=\(certificates.otherCAFile)",
            ])
        #expect(try eventually(60) { try daemon.status().uplinks?.first?.acknowledged == count }, "\(daemon.logText)")
        #expect(standIn.takenTimes == (0..<count).map { Self.epoch + $0 })
        #expect(standIn.requests.allSatisfy { $0.body["device_id"] as? String == "pi" })
        #expect(try eventually(15) { try daemon.status().uplinks?.last?.lastError != nil })
        let car = try #require(try daemon.status().uplinks?.last)
        #expect(car.url.contains("car"))
        #expect(car.acknowledged == 0)
        #expect(car.queued == count)
        #expect(car.lastError?.localizedCaseInsensitiveContains("certificate") == true, "\(car.lastError ?? "no problem shown")")

        // Its CA file replaced by a FIFO while locationd runs: never opened, the problem shown, SIGTERM still works.
        try FileManager.default.removeItem(atPath: certificates.otherCAFile)
        #expect(mkfifo(certificates.otherCAFile, 0o644) == 0)
        #expect(
            try eventually(40) { try daemon.status().uplinks?.last?.lastError?.contains("no longer a regular file") == true },
            "\((try? daemon.status().uplinks?.last?.lastError) ?? nil ?? "no problem shown")")
        daemon.process.terminate()
        #expect(eventually(15) { !daemon.process.isRunning }, "SIGTERM ends locationd")
    }

    @Test(
        "OwnTracks over HTTP: a Recorder's /pub gets each fix once, in order, with its topic, user and device",
        .timeLimit(.minutes(2)))
    func ownTracksRecorder() throws {
        let directory = TemporaryDirectory()
        let standIn = try StandIn("owntracks", plan: ["unavailable": 1], in: directory)
        let count = 50
        let daemon = try RunningDaemon(
            directory: directory,
            source: ["--replay", try UplinkBrokerTests.track(directory, "walk.gpx", count: count, from: 0), "--speed", "50"],
            extra: [
                "--journal", try UplinkBrokerTests.stateFolder(directory) + "/journal",
                "--uplink", "http://127.0.0.1:\(standIn.port)/pub?format=owntracks&user=alice&device=pi",
            ])
        #expect(try eventually(60) { try Self.uplink(daemon)?.acknowledged == count })
        #expect(standIn.takenTimes == (0..<count).map { Self.epoch + $0 })
        let first = try #require(standIn.requests.first { $0.status == 200 })
        #expect(first.body["_type"] as? String == "location")
        #expect(first.body["topic"] as? String == "owntracks/alice/pi")
        #expect((first.body["acc"] as? Int ?? 0) >= 1)
        #expect(first.path == "/pub?u=alice&d=pi")
        #expect(first.user == "alice")
    }

    @Test(
        "a backlog posted over HTTP survives kill -9 of locationd mid-drain: every fix arrives, in order, at most one twice",
        .timeLimit(.minutes(2)))
    func killNineMidDrain() throws {
        let directory = TemporaryDirectory()
        let state = try UplinkBrokerTests.stateFolder(directory)
        let backlog = 2000
        // 5 ms an answer: the whole replay is in the outbox long before it is drained.
        let standIn = try StandIn("traccar", plan: ["devices": ["pi"], "delay": 0.005], in: directory)
        let uplink = ["--journal", state + "/journal", "--uplink", "http://127.0.0.1:\(standIn.port)/?format=traccar&id=pi"]
        let first = try RunningDaemon(
            directory: directory,
            source: ["--replay", try UplinkBrokerTests.track(directory, "backlog.gpx", count: backlog, from: 0), "--speed", "100000"],
            extra: uplink)
        #expect(
            try eventually(60) {
                let uplink = try Self.uplink(first)
                return (uplink?.queued ?? 0) + (uplink?.acknowledged ?? 0) == backlog && (uplink?.acknowledged ?? 0) >= 200
            }, "the whole replay is in the outbox, and its drain has begun")
        first.kill9()
        let atKill = Set(standIn.takenTimes).count
        #expect(atKill < backlog, "killed mid-drain: \(atKill) of \(backlog) taken")
        let second = try RunningDaemon(
            directory: directory,
            source: ["--replay", try UplinkBrokerTests.track(directory, "later.gpx", count: 1, from: 100_000), "--speed", "1"],
            extra: uplink)
        #expect(eventually(90) { Set(standIn.takenTimes).count >= backlog + 1 }, "every fix arrives: \(Set(standIn.takenTimes).count) of \(backlog + 1)")
        let times = standIn.takenTimes
        let expected = Set((0..<backlog).map { Self.epoch + $0 } + [Self.epoch + 100_000])
        #expect(Set(times).symmetricDifference(expected).isEmpty, "\(expected.subtracting(times).count) missing, \(Set(times).subtracting(expected).count) not sent")
        #expect(UplinkBrokerTests.firstOutOfOrder(times) == nil, "oldest first")
        #expect(times.count - Set(times).count <= 1, "only the request in flight at the kill is posted twice: \(times.count - Set(times).count)")
        #expect(try eventually(20) { try Self.uplink(second)?.queued == 0 })
    }

    @Test(
        "locationd --check-config refuses an uplink given twice and a CA file that is a FIFO, at once and in one line",
        .timeLimit(.minutes(1)))
    func checkConfigRefusesWhatTheStartWould() throws {
        let directory = TemporaryDirectory()
        let track = try UplinkBrokerTests.track(directory, "walk.gpx", count: 5, from: 0)
        let fifo = directory.file("ca.fifo")
        #expect(mkfifo(fifo, 0o644) == 0)
        let traccar = "http://127.0.0.1:9/?format=traccar&id=pi"
        let cases: [([String], String)] = [
            (["--uplink", traccar, "--uplink", traccar + "&interval=5"], "the same uplink as --uplink 1"),
            (["--uplink", "mqtt://127.0.0.1/alice/pi", "--uplink", "mqtt://LOCALHOST/alice/pi", "--uplink", "mqtt://localhost./alice/pi"], "--uplink 3: the same uplink as --uplink 2"),
            (["--uplink", "https://127.0.0.1:9/?format=traccar&id=pi&ca-file=\(fifo)"], "not a regular file"),
        ]
        for (uplinks, says) in cases {
            let result = try Tool.run(
                "locationd", ["--check-config", "--replay", track, "--socket", directory.file("s")] + uplinks, timeout: 20, in: directory)
            #expect(result.status == 64, "\(result.stderr)")
            #expect(result.stderr.contains(says), "\(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "one line: \(result.stderr)")
        }
    }

    @Test(
        "an outbox left by an uplink no longer configured (a corrected URL) is named in the log at start, not silently stranded",
        .timeLimit(.minutes(2)))
    func aStrandedOutboxIsNamed() throws {
        let directory = TemporaryDirectory()
        let state = try UplinkBrokerTests.stateFolder(directory)
        let track = try UplinkBrokerTests.track(directory, "walk.gpx", count: 20, from: 0)
        // Port 9 (discard) has no listener here: the fixes wait in the outbox.
        let typo = try RunningDaemon(
            directory: directory, source: ["--replay", track, "--speed", "100"],
            extra: ["--journal", state + "/journal", "--uplink", "http://127.0.0.1:9/?format=traccar&id=pj"])
        #expect(try eventually(30) { try Self.uplink(typo)?.queued == 20 })
        let outbox = try #require(try Self.uplink(typo)?.outbox)
        typo.kill9()
        let corrected = try RunningDaemon(
            directory: directory, source: ["--replay", track, "--speed", "100"],
            extra: ["--journal", state + "/journal", "--uplink", "http://127.0.0.1:9/?format=traccar&id=pi"])
        #expect(eventually(20) { corrected.logText.contains("holds 20 fixes of no uplink configured now") })
        #expect(corrected.logText.contains(outbox), "the old outbox is named: \(corrected.logText)")
    }
}
