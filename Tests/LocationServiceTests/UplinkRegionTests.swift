import Foundation
import GPSDTestSupport
import LocationControl
import LocationCore
import LocationTesting
import Testing

/// Region transitions through locationd's uplinks to a real mosquitto broker: OwnTracks `transition`
/// messages under the outbox rule, and Home Assistant's zone on the tracker's state topic.
@Suite("region transitions reach the uplinks' receivers", .serialized)
struct UplinkRegionTests {
    /// `NAME=LAT,LON,RADIUS` around the demo walk's fix `index`.
    static func region(_ name: String, at index: Int, radius: Int) -> String {
        let centre = LocationFixtures.walk(index)
        return "\(name)=\(centre.latitude),\(centre.longitude),\(radius)"
    }

    @Test(
        "OwnTracks: enter and leave wait in the events' outbox while the broker is away, survive kill -9, and arrive once each on …/event, not retained",
        .timeLimit(.minutes(3)))
    func transitionsSurviveKillNine() throws {
        let directory = TemporaryDirectory()
        let broker = try MosquittoBroker(directory: directory.file("broker"))
        let state = try UplinkBrokerTests.stateFolder(directory)
        let options = [
            "--journal", state + "/journal", "--region", Self.region("spot", at: 150, radius: 10),
            "--uplink", "mqtt://127.0.0.1:\(broker.port)/alice/pi",
        ]
        // First run: no broker; the walk crosses the region, and both transitions wait when locationd is killed.
        let first = try RunningDaemon(
            directory: directory,
            source: ["--replay", try UplinkBrokerTests.track(directory, "walk.gpx", count: 300, from: 0), "--speed", "100"],
            extra: options)
        #expect(try eventually(60) { try UplinkBrokerTests.uplink(first)?.events?.queued == 2 }, "enter and exit wait")
        #expect(try UplinkBrokerTests.uplink(first)?.events?.acknowledged == 0)
        first.kill9()

        try broker.start()
        let subscriber = try MosquittoSubscriber(broker: broker, topic: "owntracks/#")
        // Second run, far from the region: what waited is sent, and the restored state adds no transition.
        let second = try RunningDaemon(
            directory: directory,
            source: ["--replay", try UplinkBrokerTests.track(directory, "far.gpx", count: 5, from: 100_000), "--speed", "5"],
            extra: options)
        #expect(try eventually(60) { try UplinkBrokerTests.uplink(second)?.events?.acknowledged == 2 }, "both acknowledged")
        #expect(try eventually(30) { try second.status().sourceStatus == .ended })
        let transitions = subscriber.messages.filter { $0.topic == "owntracks/alice/pi/event" }.map(\.payload)
        #expect(transitions.map { $0["event"] as? String } == ["enter", "leave"], "\(transitions)")
        for transition in transitions {
            #expect(transition["_type"] as? String == "transition")
            #expect(transition["desc"] as? String == "spot")
            #expect(transition["t"] as? String == "c")
            #expect((transition["acc"] as? Int ?? 0) >= 1)
            #expect((transition["rid"] as? String)?.count == 8)
            #expect(transition["tst"] as? Int == transition["wtst"] as? Int)
        }
        // At the walk's crossings: the enter inside the radius before the centre, the exit past the margin after it.
        let times = transitions.compactMap { $0["tst"] as? Int }.map { $0 - UplinkBrokerTests.epoch }
        #expect(times.count == 2 && (130..<150).contains(times[0]) && (165..<200).contains(times[1]), "\(times)")
        // Not retained: a new subscriber asking for retained messages only gets none on …/event.
        let retainedFile = directory.file("retained.out")
        _ = try ChildProcess([
            "sh", "-c", "mosquitto_sub -h 127.0.0.1 -p \(broker.port) -t owntracks/alice/pi/event --retained-only -W 2 > '\(retainedFile)'",
        ]).wait()
        let retained = (try? String(contentsOfFile: retainedFile, encoding: .utf8)) ?? "missing"
        #expect(retained.isEmpty, "\(retained)")
        #expect(try UplinkBrokerTests.uplink(second)?.events?.queued == 0)
    }

    @Test(
        "Home Assistant: the tracker's state topic says the region while inside and None outside; discovery names it; status shows the zone",
        .timeLimit(.minutes(2)))
    func homeAssistantZoneFollowsTheRegion() throws {
        let directory = TemporaryDirectory()
        let broker = try MosquittoBroker(directory: directory.file("broker"))
        try broker.start()
        let subscriber = try MosquittoSubscriber(broker: broker, topic: "#", id: "home-assistant")
        let daemon = try RunningDaemon(
            directory: directory,
            source: ["--replay", try UplinkBrokerTests.track(directory, "walk.gpx", count: 300, from: 0), "--speed", "20"],
            extra: ["--region", Self.region("home", at: 150, radius: 10), "--uplink", "mqtt://127.0.0.1:\(broker.port)/pi?format=homeassistant"])
        let stateTopic = "locationd/pi/state"
        var zone: String?
        #expect(try eventually(30) {
            zone = try UplinkBrokerTests.uplink(daemon)?.zone
            return zone == "home"
        }, "inside: the zone is the region (\(String(describing: zone)))")
        #expect(try eventually(60) { try daemon.status().sourceStatus == .ended })
        #expect(try UplinkBrokerTests.uplink(daemon)?.zone == nil, "left again")
        let states = subscriber.text.split(separator: "\n").filter { $0.hasPrefix(stateTopic + " ") }.map { String($0.dropFirst(stateTopic.count + 1)) }
        #expect(states == ["None", "home", "None"], "\(states)")
        let discovery = subscriber.messages.first { $0.topic == "homeassistant/device_tracker/locationd_pi/config" }?.payload
        #expect(discovery?["state_topic"] as? String == stateTopic)
        #expect(discovery?["payload_reset"] as? String == "None")
    }

    @Test(
        "OwnTracks over HTTP: a Recorder gets enter and leave as transitions with the …/event topic, through a 503, and Traccar gets none",
        .timeLimit(.minutes(2)))
    func recorderGetsTransitions() throws {
        let directory = TemporaryDirectory()
        let standIn = try UplinkHTTPTests.StandIn("owntracks", plan: ["unavailable": 1], in: directory)
        let traccarDirectory = TemporaryDirectory()
        let traccar = try UplinkHTTPTests.StandIn("traccar", plan: ["devices": ["pi"]], in: traccarDirectory)
        let count = 300
        let daemon = try RunningDaemon(
            directory: directory,
            source: ["--replay", try UplinkBrokerTests.track(directory, "walk.gpx", count: count, from: 0), "--speed", "100"],
            extra: [
                "--journal", try UplinkBrokerTests.stateFolder(directory) + "/journal", "--region", Self.region("spot", at: 150, radius: 10),
                "--uplink", "http://127.0.0.1:\(standIn.port)/pub?format=owntracks&user=alice&device=pi",
                "--uplink", "http://127.0.0.1:\(traccar.port)/?format=traccar&id=pi",
            ])
        #expect(try eventually(60) {
            let uplinks = try daemon.status().uplinks ?? []
            return uplinks.count == 2 && uplinks[0].events?.acknowledged == 2 && uplinks[0].acknowledged == count && uplinks[1].acknowledged == count
        }, "every fix and both transitions acknowledged: \(String(describing: try? daemon.status().uplinks))")
        let transitions = standIn.requests.filter { $0.status == 200 && $0.body["_type"] as? String == "transition" }
        #expect(transitions.map { $0.body["event"] as? String } == ["enter", "leave"])
        #expect(transitions.allSatisfy { $0.body["topic"] as? String == "owntracks/alice/pi/event" && $0.body["desc"] as? String == "spot" })
        #expect(try daemon.status().uplinks?[1].events == nil, "Traccar draws its own geofences")
        #expect(!traccar.requests.contains { $0.body["_type"] != nil })
    }
}
