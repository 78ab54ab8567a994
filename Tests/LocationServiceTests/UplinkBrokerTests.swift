import Foundation
import GPSDTestSupport
import LocationControl
import LocationCore
import LocationGPX
import LocationTesting
import Testing

/// locationd's MQTT uplink against a real mosquitto broker: the outbox rule across the broker's absence and
/// restarts and locationd's kill -9.
@Suite("uplinks deliver every fix to a real mosquitto broker", .serialized)
struct UplinkBrokerTests {
    static let epoch = Int(LocationFixtures.epoch.timeIntervalSince1970)

    /// A state folder for `--journal` (owner-only, as locationd wants it).
    static func stateFolder(_ directory: TemporaryDirectory) throws -> String {
        let path = directory.file("state")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return path
    }

    /// A GPX track of `count` walk fixes from the walk's `from`th second.
    static func track(_ directory: TemporaryDirectory, _ name: String, count: Int, from: Int) throws -> String {
        let path = directory.file(name)
        let writer = try GPXWriter(path: path)
        try writer.write(contentsOf: LocationFixtures.walk(count: count, from: from))
        try writer.finish()
        return path
    }

    /// Where the first arrival of a fix time comes before the first arrival of an earlier one (the arrivals
    /// around it, as seconds of the walk); `nil` when they are in order.
    static func firstOutOfOrder(_ times: [Int]) -> [Int]? {
        var seen = Set<Int>()
        let firsts = times.filter { seen.insert($0).inserted }
        guard let index = firsts.indices.dropLast().first(where: { firsts[$0] >= firsts[$0 + 1] }) else { return nil }
        return firsts[max(0, index - 5)..<min(firsts.count, index + 6)].map { $0 - epoch }
    }

    static func uplink(_ daemon: RunningDaemon) throws -> UplinkStatus? {
        try daemon.status().uplinks?.first
    }

    @Test(
        "a broker stalled while the outbox overflows gets at most the window of the fixes dropped for room, not all of them, once it wakes",
        .timeLimit(.minutes(2)))
    func aStalledBrokerGetsNoDroppedFix() throws {
        let directory = TemporaryDirectory()
        let broker = try MosquittoBroker(directory: directory.file("broker"))
        try broker.start()
        let subscriber = try MosquittoSubscriber(broker: broker, topic: "owntracks/#")
        let count = 300, queue = 20, window = 5
        let daemon = try RunningDaemon(
            directory: directory, source: ["--replay", try Self.track(directory, "walk.gpx", count: count, from: 0), "--speed", "25"],
            extra: [
                "--journal", try Self.stateFolder(directory) + "/journal",
                "--uplink", "mqtt://127.0.0.1:\(broker.port)/alice/pi?window=\(window)&queue=\(queue)",
            ])
        #expect(try eventually(30) { try (Self.uplink(daemon)?.acknowledged ?? 0) >= 10 }, "fixes flow before the stall")
        broker.pause(true)
        let acknowledgedBefore = try #require(try Self.uplink(daemon)?.acknowledged)
        #expect(try eventually(60) { try daemon.status().sourceStatus == .ended }, "the replay ends while the broker is stalled")
        broker.pause(false)
        #expect(try eventually(60) { try Self.uplink(daemon).map { $0.queued == 0 && $0.inFlight == 0 } ?? false }, "the outbox drains")
        #expect(eventually(10) { Set(subscriber.locationTimes).contains(Self.epoch + count - 1) }, "the newest arrives")
        // Fixes after those acknowledged before the stall and before the `queue` newest were dropped for room:
        // only those libmosquitto held in flight may still arrive (a few more acknowledged meanwhile: twice).
        let dropped = (acknowledgedBefore..<(count - queue)).map { Self.epoch + $0 }
        let arrivedDropped = Set(subscriber.locationTimes).intersection(dropped)
        #expect(arrivedDropped.count <= 2 * window, "\(arrivedDropped.count) fixes dropped for room arrived")
        #expect((try Self.uplink(daemon)?.droppedFull ?? 0) >= count - queue - acknowledgedBefore - 2 * window)
    }

    @Test(
        "mqtts:// to a real broker: with the CA that signed its certificate every fix arrives in order; with another CA none is sent and status says why",
        .timeLimit(.minutes(2)))
    func tlsWithTheRightAndAWrongCA() throws {
        let directory = TemporaryDirectory()
        let certificates = try TestCertificates(in: directory.file("tls"))
        let broker = try MosquittoBroker(directory: directory.file("broker"), tls: certificates)
        try broker.start()
        let tlsPort = try #require(broker.tlsPort)
        let subscriber = try MosquittoSubscriber(broker: broker, topic: "owntracks/#")
        let count = 40
        let daemon = try RunningDaemon(
            directory: directory, source: ["--replay", try Self.track(directory, "walk.gpx", count: count, from: 0), "--speed", "20"],
            extra: [
                "--journal", try Self.stateFolder(directory) + "/journal",
                "--uplink", "mqtts://localhost:\(tlsPort)/alice/pi?ca-file=\(certificates.caFile)",
                "--uplink", "mqtts://127.0.0.1:\(tlsPort)/bob/pi?ca-file=\(certificates.otherCAFile)",
            ])
        #expect(try eventually(60) { try daemon.status().uplinks?.first?.acknowledged == count }, "\(daemon.logText)")
        #expect(eventually(10) { subscriber.locationTimes.count >= count })
        let alice = subscriber.messages.filter { $0.topic == "owntracks/alice/pi" }.compactMap { $0.payload["tst"] as? Int }
        #expect(alice == (0..<count).map { Self.epoch + $0 })
        // The other CA did not sign the broker's certificate: the handshake fails, nothing leaves the outbox.
        #expect(try eventually(15) { try daemon.status().uplinks?.last?.lastError != nil }, "\((try? daemon.status().uplinks) ?? nil ?? [])")
        let bob = try #require(try daemon.status().uplinks?.last)
        #expect(bob.url.contains("bob"))
        #expect(bob.connected == false)
        #expect(bob.acknowledged == 0)
        #expect(bob.queued == count)
        #expect(bob.lastError?.localizedCaseInsensitiveContains("TLS") == true, "\(bob.lastError ?? "no problem shown")")
        #expect(!subscriber.messages.contains { $0.topic.hasPrefix("owntracks/bob") })

        // The CA file replaced by a FIFO while locationd runs: never opened (it would hang libmosquitto's read
        // and locationd's stop), the problem shown, and SIGTERM still ends locationd.
        try FileManager.default.removeItem(atPath: certificates.caFile)
        #expect(mkfifo(certificates.caFile, 0o644) == 0)
        try broker.restart()
        #expect(
            try eventually(30) { try daemon.status().uplinks?.first?.lastError?.contains("no longer a regular file") == true },
            "\((try? daemon.status().uplinks?.first?.lastError) ?? nil ?? "no problem shown")")
        daemon.process.terminate()
        #expect(eventually(15) { !daemon.process.isRunning }, "SIGTERM ends locationd")
    }

    @Test(
        "every fix of a replay reaches the broker in order, though the broker is down at the start and restarted twice mid-stream",
        .timeLimit(.minutes(3)))
    func brokerDownAtStartAndRestartedTwice() throws {
        let directory = TemporaryDirectory()
        let broker = try MosquittoBroker(directory: directory.file("broker"))
        try broker.start()
        let subscriber = try MosquittoSubscriber(broker: broker, topic: "owntracks/#")
        broker.stop()
        let count = 300
        let state = try Self.stateFolder(directory)
        let daemon = try RunningDaemon(
            directory: directory, source: ["--replay", try Self.track(directory, "walk.gpx", count: count, from: 0), "--speed", "20"],
            extra: ["--journal", state + "/journal", "--uplink", "mqtt://127.0.0.1:\(broker.port)/alice/pi?window=10"])

        // Nothing can be sent: the fixes wait in the outbox, and status says why.
        #expect(try eventually { try (Self.uplink(daemon)?.queued ?? 0) >= 20 }, "fixes wait for the broker")
        let waiting = try Self.uplink(daemon)
        #expect(waiting?.connected == false)
        #expect(waiting?.lastError != nil, "the connection's problem is shown")
        #expect(waiting?.outbox?.hasPrefix(state + "/uplinks/") == true)

        try broker.start()
        #expect(eventually(60) { subscriber.locationTimes.count >= count / 3 }, "the backlog arrives once the broker is there")
        try broker.restart()
        #expect(eventually(60) { Set(subscriber.locationTimes).count >= 2 * count / 3 }, "arrivals go on after a restart")
        try broker.restart()
        #expect(eventually(90) { Set(subscriber.locationTimes).count >= count }, "every fix arrives: \(Set(subscriber.locationTimes).count) of \(count)")

        let times = subscriber.locationTimes
        #expect(Set(times) == Set((0..<count).map { Self.epoch + $0 }), "exactly the replay's fixes")
        #expect(Self.firstOutOfOrder(times) == nil, "oldest first, live fixes behind the backlog")
        #expect(times.count - Set(times).count <= 2 * 10, "repeated only within the in-flight window at each restart: \(times.count - Set(times).count)")
        // The subscriber can have the last fixes before locationd has the broker's PUBACKs for them.
        #expect(
            try eventually(30) { try Self.uplink(daemon).map { $0.acknowledged == count && $0.queued == 0 } == true },
            "every fix acknowledged, none queued")
        let done = try Self.uplink(daemon)
        #expect(done?.connected == true)
        #expect(done?.acknowledged == count)
        #expect(done?.queued == 0)
        // OwnTracks locations: on the device's topic, with what Home Assistant and the Recorder require.
        let message = try #require(subscriber.messages.first { $0.payload["_type"] as? String == "location" })
        #expect(message.topic == "owntracks/alice/pi")
        #expect((message.payload["acc"] as? Int ?? 0) >= 1)
        #expect(message.payload["tid"] as? String == "pi")
    }

    @Test(
        "a backlog survives kill -9 of locationd before and during its drain: every fix arrives in order, repeated at most within the in-flight window",
        .timeLimit(.minutes(3)))
    func backlogSurvivesKillNine() throws {
        let directory = TemporaryDirectory()
        let broker = try MosquittoBroker(directory: directory.file("broker"))
        let state = try Self.stateFolder(directory)
        let window = 10
        let uplink = ["--journal", state + "/journal", "--uplink", "mqtt://127.0.0.1:\(broker.port)/alice/pi?window=\(window)"]
        // Under a sanitizer a quarter: the drain, the kill and the resend are the same code, four times slower.
        let backlog = Sanitizer.active == nil ? 20_000 : 5_000

        // First run: no broker; the whole replay waits in the outbox when locationd is killed.
        let first = try RunningDaemon(
            directory: directory,
            source: ["--replay", try Self.track(directory, "backlog.gpx", count: backlog, from: 0), "--speed", "100000"],
            extra: uplink)
        #expect(try eventually(60) { try Self.uplink(first)?.queued == backlog }, "the replay waits in the outbox")
        first.kill9()

        try broker.start()
        let subscriber = try MosquittoSubscriber(broker: broker, topic: "owntracks/#")
        // Second run: the backlog drains until the broker stops answering and locationd is killed mid-drain.
        let second = try RunningDaemon(
            directory: directory,
            source: ["--replay", try Self.track(directory, "second.gpx", count: 1, from: 100_000), "--speed", "1"],
            extra: uplink)
        #expect(eventually(60) { subscriber.locationTimes.count >= 2000 }, "the backlog drains")
        broker.pause(true)
        second.kill9()
        broker.pause(false)
        let beforeThird = Set(subscriber.locationTimes).count

        // Third run: what was not acknowledged is sent, then its own fixes.
        let third = try RunningDaemon(
            directory: directory,
            source: ["--replay", try Self.track(directory, "third.gpx", count: 5, from: 200_000), "--speed", "5"],
            extra: uplink)
        let expected = Set((0..<backlog).map { Self.epoch + $0 } + (200_000..<200_005).map { Self.epoch + $0 })
        #expect(eventually(120) { expected.isSubset(of: Set(subscriber.locationTimes)) }, "every fix arrives")
        let times = subscriber.locationTimes
        let allowed = expected.union([Self.epoch + 100_000])
        #expect(Set(times).isSubset(of: allowed), "nothing but the replays' fixes")
        #expect(Self.firstOutOfOrder(times) == nil, "oldest first across the restarts")
        #expect(times.count - Set(times).count <= window, "repeated at most within the window: \(times.count - Set(times).count)")
        #expect(beforeThird < backlog, "locationd was killed while the backlog drained (\(beforeThird) of \(backlog) had arrived)")
        #expect(try eventually { try Self.uplink(third)?.queued == 0 })
    }
}

extension UplinkBrokerTests {
    @Test(
        "with the outbox unwritable (a full disk), every fix still reaches the broker, in order, from memory, and status says the outbox is not written",
        .timeLimit(.minutes(3)), .sanitizerExclusion("LocationServiceTests.UplinkBrokerTests/aFullDiskDelaysNothing()"))
    func aFullDiskDelaysNothing() throws {
        let directory = TemporaryDirectory()
        let broker = try MosquittoBroker(directory: directory.file("broker"))
        try broker.start()
        let subscriber = try MosquittoSubscriber(broker: broker, topic: "owntracks/#")
        broker.stop()
        let state = try Self.stateFolder(directory)
        let count = 300
        let socket = directory.file("run/control.sock")
        try FileManager.default.createDirectory(atPath: directory.file("run"), withIntermediateDirectories: true)
        // A 4,000-byte file size limit: a few dozen records fit, then every append fails with EFBIG, as on a
        // full disk.
        let (daemon, _, _) = try Tool.start(
            "/usr/bin/prlimit",
            ["--fsize=4000:unlimited", Tool.path("locationd"), "--replay", try Self.track(directory, "walk.gpx", count: count, from: 0),
             "--speed", "50", "--socket", socket, "--journal", state + "/journal",
             "--uplink", "mqtt://127.0.0.1:\(broker.port)/alice/pi"],
            in: directory)
        defer {
            kill(daemon.processIdentifier, SIGTERM)
            daemon.waitUntilExit()
        }
        func status() -> UplinkStatus? {
            (try? ControlClient.request(.status, path: socket).decode(DaemonStatus.self, forKey: "status"))?.uplinks?.first
        }
        #expect(eventually(30) { status()?.outboxProblem?.contains("File too large") == true }, "status says the outbox is not written: \(String(describing: status()))")
        #expect(eventually(30) { status()?.queued == count }, "every fix is kept meanwhile")

        try broker.start()
        #expect(eventually(60) { Set(subscriber.locationTimes).count >= count }, "every fix arrives: \(Set(subscriber.locationTimes).count) of \(count)")
        let times = subscriber.locationTimes
        #expect(Set(times) == Set((0..<count).map { Self.epoch + $0 }))
        #expect(Self.firstOutOfOrder(times) == nil, "oldest first")
        #expect(eventually(10) { status()?.queued == 0 })
    }
}

extension UplinkBrokerTests {
    @Test(
        "Home Assistant: discovery is retained and sent again when Home Assistant says online; the attributes topic gets the newest fix only, never the backlog",
        .timeLimit(.minutes(3)))
    func homeAssistantGetsTheLatestFixOnly() throws {
        let directory = TemporaryDirectory()
        let broker = try MosquittoBroker(directory: directory.file("broker"))
        try broker.start()
        let subscriber = try MosquittoSubscriber(broker: broker, topic: "#", id: "home-assistant")
        broker.stop()
        let count = 200
        // The whole replay comes while the broker is away.
        let daemon = try RunningDaemon(
            directory: directory, source: ["--replay", try Self.track(directory, "walk.gpx", count: count, from: 0), "--speed", "200"],
            extra: ["--uplink", "mqtt://127.0.0.1:\(broker.port)/pi?format=homeassistant"])
        #expect(try eventually(30) { try daemon.status().sourceStatus == .ended }, "the replay ends while the broker is away")
        let waiting = try Self.uplink(daemon)
        #expect(waiting?.connected == false)
        #expect(waiting?.queued == 1, "only the newest fix waits")

        try broker.start()
        let attributes = "locationd/pi/attributes"
        let config = "homeassistant/device_tracker/locationd_pi/config"
        #expect(eventually(30) { subscriber.messages.contains { $0.topic == attributes } }, "the newest fix arrives")
        #expect(try eventually { try Self.uplink(daemon)?.acknowledged == 1 })
        let positions = subscriber.messages.filter { $0.topic == attributes }.map(\.payload)
        #expect(positions.count == 1, "one position, not the backlog: \(positions.count)")
        let last = LocationFixtures.walk(count - 1)
        #expect(positions.first?["timestamp"] as? String == RFC3339.string(from: last.timestamp))
        #expect(abs((positions.first?["latitude"] as? Double ?? 0) - last.latitude) < 1e-9)
        #expect((positions.first?["gps_accuracy"] as? Int ?? 0) >= 1)
        let discovery = try #require(subscriber.messages.first { $0.topic == config }?.payload)
        #expect(discovery["source_type"] as? String == "gps")
        #expect(discovery["json_attributes_topic"] as? String == attributes)
        #expect(discovery["unique_id"] as? String == "locationd_pi")
        #expect(subscriber.text.contains("locationd/pi/availability online"), "available while connected")

        // Home Assistant restarted: it says so, and discovery comes again.
        let configs = subscriber.messages.filter { $0.topic == config }.count
        _ = try ChildProcess(["mosquitto_pub", "-h", "127.0.0.1", "-p", "\(broker.port)", "-t", "homeassistant/status", "-m", "online"]).wait()
        #expect(eventually(10) { subscriber.messages.filter { $0.topic == config }.count > configs }, "discovery sent again")
        // A new subscriber (Home Assistant starting) gets the retained config and position at once.
        let late = try MosquittoSubscriber(broker: broker, topic: "#", id: "late")
        #expect(eventually(10) { late.messages.contains { $0.topic == config } && late.messages.contains { $0.topic == attributes } })
    }
}

extension UplinkBrokerTests {
    @Test("OwnTracks' reportLocation command on …/cmd is answered at once with the newest fix, t:r; a clean stop publishes no will", .timeLimit(.minutes(2)))
    func reportLocationIsAnswered() throws {
        let directory = TemporaryDirectory()
        let broker = try MosquittoBroker(directory: directory.file("broker"))
        try broker.start()
        let subscriber = try MosquittoSubscriber(broker: broker, topic: "owntracks/#")
        // One fix a minute of track time: a reply is not the stream's next fix.
        let daemon = try RunningDaemon(
            directory: directory, source: ["--replay", try Self.track(directory, "walk.gpx", count: 600, from: 0), "--speed", "10"],
            extra: ["--uplink", "mqtt://127.0.0.1:\(broker.port)/alice/pi?interval=60"])
        #expect(eventually(30) { !subscriber.locationTimes.isEmpty }, "the stream runs")
        #expect(try eventually { try Self.uplink(daemon)?.connected == true })
        _ = try ChildProcess([
            "mosquitto_pub", "-h", "127.0.0.1", "-p", "\(broker.port)", "-t", "owntracks/alice/pi/cmd", "-q", "1",
            "-m", #"{"_type":"cmd","action":"reportLocation"}"#,
        ]).wait()
        var reply: [String: Any]?
        #expect(eventually(10) {
            reply = subscriber.messages.first { $0.payload["t"] as? String == "r" }?.payload
            return reply != nil
        }, "a reply with t:r")
        #expect(reply?["_type"] as? String == "location")
        #expect((reply?["acc"] as? Int ?? 0) >= 1)
        // The newest fix the receiver gave: at least as new as anything the stream sent before it.
        let streamed = subscriber.messages.filter { $0.payload["t"] == nil }.compactMap { $0.payload["tst"] as? Int }
        #expect((reply?["tst"] as? Int ?? 0) >= (streamed.first ?? .max), "\(String(describing: reply)) after \(streamed)")

        // A clean stop says goodbye: no will. (The broker would publish it before it handles the marker below.)
        daemon.process.terminate()
        daemon.process.waitUntilExit()
        _ = try ChildProcess(["mosquitto_pub", "-h", "127.0.0.1", "-p", "\(broker.port)", "-t", "owntracks/marker", "-m", #"{"_type":"marker"}"#]).wait()
        #expect(eventually(10) { subscriber.messages.contains { $0.topic == "owntracks/marker" } })
        #expect(!subscriber.messages.contains { $0.payload["_type"] as? String == "lwt" }, "no will after SIGTERM")
    }
}
