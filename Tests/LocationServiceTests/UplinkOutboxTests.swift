import Foundation
import LocationCore
import LocationService
import LocationTesting
import Testing

@testable import LocationUplink

/// The uplink's outbox on its own: fixes leave it only when acknowledged, and a reopened outbox holds exactly
/// what was not.
@Suite("the uplink outbox")
struct UplinkOutboxTests {
    static func outbox(_ directory: TemporaryDirectory, capacity: Int = 100_000) throws -> UplinkOutbox {
        try UplinkOutbox(path: directory.file("outbox"), capacity: capacity)
    }

    @Test("what was sent and not acknowledged is there after a reopen; what was acknowledged is not")
    func reopenedOutboxHoldsTheUnacknowledged() throws {
        let directory = TemporaryDirectory()
        let fixes = LocationFixtures.walk(count: 50)
        do {
            let outbox = try Self.outbox(directory)
            for fix in fixes { try outbox.add(fix) }
            let sent = outbox.takeUnsent(window: 20)
            #expect(sent.map(\.location.timestamp) == fixes.prefix(20).map(\.timestamp))
            // Acknowledged out of order: only the contiguous prefix (0...9) leaves; 12 waits for 10 and 11.
            outbox.acknowledge(Array(sent[0..<10].map(\.sequence)) + [sent[12].sequence])
            #expect(outbox.counts.queued == 40)
            #expect(outbox.counts.inFlight == 9)
            #expect(outbox.counts.acknowledged == 10)
            // Not closed: as a kill -9 leaves it.
        }
        let reopened = try Self.outbox(directory)
        #expect(reopened.counts.queued == 40)
        let again = reopened.takeUnsent(window: 100)
        #expect(again.map(\.location.timestamp) == fixes.dropFirst(10).map(\.timestamp), "sent again from the first unacknowledged")
    }

    @Test("the window counts from the oldest unacknowledged fix")
    func theWindowCountsFromTheOldestUnacknowledged() throws {
        let outbox = try UplinkOutbox(path: nil, capacity: 100)
        for fix in LocationFixtures.walk(count: 30) { try outbox.add(fix) }
        let first = outbox.takeUnsent(window: 5)
        #expect(first.count == 5)
        #expect(outbox.takeUnsent(window: 5).isEmpty, "nothing more until one is acknowledged")
        outbox.acknowledge([first[1].sequence])
        #expect(outbox.takeUnsent(window: 5).isEmpty, "an acknowledgement after a gap opens nothing")
        outbox.acknowledge([first[0].sequence])
        #expect(outbox.takeUnsent(window: 5).count == 2)
    }

    @Test("a full outbox drops its oldest and counts them")
    func aFullOutboxDropsItsOldest() throws {
        let directory = TemporaryDirectory()
        let fixes = LocationFixtures.walk(count: 25)
        do {
            let outbox = try Self.outbox(directory, capacity: 10)
            for fix in fixes { try outbox.add(fix) }
            #expect(outbox.counts.queued == 10)
            #expect(outbox.counts.droppedFull == 15)
            #expect(outbox.takeUnsent(window: 100).map(\.location.timestamp) == fixes.suffix(10).map(\.timestamp))
        }
        // Opened with room for all 25: the 15 dropped are not sent again (the cursor counts them as done).
        let reopened = try Self.outbox(directory, capacity: 100)
        #expect(reopened.takeUnsent(window: 100).map(\.location.timestamp) == fixes.suffix(10).map(\.timestamp))
        #expect(reopened.counts.droppedFull == 0)
    }

    @Test("fixes acknowledged ahead and then taken back (unsent) are not counted as in flight, never below zero")
    func inFlightNeverCountsWhatWasTakenBack() throws {
        let outbox = try UplinkOutbox(path: nil, capacity: 100)
        for fix in LocationFixtures.walk(count: 10) { try outbox.add(fix) }
        let sent = outbox.takeUnsent(window: 5)
        outbox.acknowledge([sent[3].sequence, sent[4].sequence])
        #expect(outbox.counts.inFlight == 3)
        outbox.unsend(from: sent[1].sequence)
        #expect(outbox.counts.inFlight == 1, "only the first is still out")
        outbox.unsend(from: sent[0].sequence)
        #expect(outbox.counts.inFlight == 0)
        #expect(outbox.takeUnsent(window: 5).map(\.sequence) == [sent[0].sequence, sent[1].sequence, sent[2].sequence])
    }

    @Test("a full outbox whose broker stays away keeps its memory and its file within its capacity")
    func aFullOutboxStaysBounded() throws {
        let directory = TemporaryDirectory()
        let outbox = try Self.outbox(directory, capacity: 1000)
        let fixes = LocationFixtures.walk(count: 20_000)
        for fix in fixes { try outbox.add(fix) }
        #expect(outbox.counts.queued == 1000)
        #expect(outbox.counts.droppedFull == 19_000)
        #expect(outbox.memoryCount <= 1000 + 4097, "fixes kept in memory: \(outbox.memoryCount)")
        let size = try #require(try FileManager.default.attributesOfItem(atPath: directory.file("outbox"))[.size] as? Int)
        let perFix = size / max(1, 2 * 1000 + UplinkOutbox.compactionThreshold)
        #expect(size < 200 * (2 * 1000 + UplinkOutbox.compactionThreshold), "\(size) bytes (\(perFix) a fix)")
        #expect(outbox.takeUnsent(window: 5000).map(\.location.timestamp) == fixes.suffix(1000).map(\.timestamp))
    }

    @Test("max-age drops, oldest first, what is that much older than the newest fix (in fix time), counts it, and holds after a reopen")
    func maxAgeDropsTheOldest() throws {
        let directory = TemporaryDirectory()
        // A fix a second; the bound keeps 100 s behind the newest.
        let fixes = LocationFixtures.walk(count: 300)
        do {
            let outbox = try UplinkOutbox(path: directory.file("o.outbox"), capacity: 100_000, maxAge: 100)
            for fix in fixes.prefix(250) { try outbox.add(fix) }
            let kept = outbox.takeUnsent(window: 1000).map(\.location.timestamp)
            #expect(kept == fixes[149..<250].map(\.timestamp), "the 101 fixes within 100 s of the newest")
            #expect(outbox.counts.droppedOld == 149 && outbox.counts.droppedFull == 0)
        }
        // Reopened with a tighter bound: what the file holds is cut to it at once, and counted. The 149 dropped
        // before are still in the file (it is rewritten only after many acknowledgements), but the cursor
        // counts them as done: neither sent nor counted again.
        let reopened = try UplinkOutbox(path: directory.file("o.outbox"), capacity: 100_000, maxAge: 60)
        #expect(reopened.counts.queued == 61 && reopened.counts.droppedOld == 40, "\(reopened.counts)")
        #expect(reopened.takeUnsent(window: 1000).first?.location.timestamp == fixes[189].timestamp)
        // One fix dated a century ahead drops nothing, and the fixes after it still go (the bound counts from
        // the system clock when that is earlier).
        let future = try UplinkOutbox(path: nil, capacity: 100_000, maxAge: 100, now: { fixes[299].timestamp })
        var ahead = fixes[200]
        ahead.timestamp = fixes[200].timestamp.addingTimeInterval(100 * 365 * 86_400)
        for fix in fixes[150..<200] + [ahead] + fixes[201..<300] { try future.add(fix) }
        #expect(future.counts.queued + future.counts.droppedOld == 150)
        #expect(future.takeUnsent(window: 1000).map(\.location.timestamp).contains(ahead.timestamp), "the future fix is sent too")
        #expect(future.counts.droppedOld == 49, "only what is 100 s older than the clock: fixes 150…198")
        // Without the bound nothing is dropped for age.
        let unbounded = try UplinkOutbox(path: nil, capacity: 100_000)
        for fix in fixes { try unbounded.add(fix) }
        #expect(unbounded.counts.queued == 300 && unbounded.counts.droppedOld == 0)
    }

    @Test("a refusal counts once, as refused, and only for a fix still waiting: one dropped for room meanwhile is not counted twice")
    func refusalsAreCountedOnce() throws {
        let directory = TemporaryDirectory()
        let outbox = try Self.outbox(directory, capacity: 3)
        let fixes = LocationFixtures.walk(count: 6)
        for fix in fixes.prefix(3) { try outbox.add(fix) }
        let sent = outbox.takeUnsent(window: 1)
        // The fix in flight is dropped for room before its answer comes: the refusal that follows changes nothing.
        for fix in fixes.suffix(3) { try outbox.add(fix) }
        outbox.acknowledge(sent.map(\.sequence), refused: true)
        #expect(outbox.counts == UplinkOutbox.Counts(queued: 3, inFlight: 0, acknowledged: 0, refused: 0, droppedFull: 3, droppedOld: 0))
        let next = outbox.takeUnsent(window: 1)
        outbox.acknowledge(next.map(\.sequence), refused: true)
        outbox.acknowledge(next.map(\.sequence), refused: true)
        outbox.acknowledge(outbox.takeUnsent(window: 1).map(\.sequence))
        #expect(outbox.counts == UplinkOutbox.Counts(queued: 1, inFlight: 0, acknowledged: 1, refused: 1, droppedFull: 3, droppedOld: 0))
    }

    @Test("the journal is rewritten once many are acknowledged, and a reopen after it still holds exactly the rest")
    func compactionKeepsTheRest() throws {
        let directory = TemporaryDirectory()
        let count = UplinkOutbox.compactionThreshold * 3
        let fixes = LocationFixtures.walk(count: count)
        do {
            let outbox = try Self.outbox(directory)
            for fix in fixes { try outbox.add(fix) }
            let sizeBefore = try #require(try FileManager.default.attributesOfItem(atPath: directory.file("outbox"))[.size] as? Int)
            let sent = outbox.takeUnsent(window: count)
            outbox.acknowledge(sent.prefix(2 * UplinkOutbox.compactionThreshold + 7).map(\.sequence))
            let sizeAfter = try #require(try FileManager.default.attributesOfItem(atPath: directory.file("outbox"))[.size] as? Int)
            #expect(sizeAfter < sizeBefore / 2, "rewritten: \(sizeBefore) → \(sizeAfter) bytes")
        }
        let reopened = try Self.outbox(directory)
        let rest = reopened.takeUnsent(window: count).map(\.location.timestamp)
        #expect(rest == fixes.dropFirst(2 * UplinkOutbox.compactionThreshold + 7).map(\.timestamp))
    }

    @Test("a damaged or foreign cursor counts nothing as acknowledged: everything is sent again, nothing skipped")
    func aDamagedCursorSendsEverythingAgain() throws {
        let directory = TemporaryDirectory()
        let fixes = LocationFixtures.walk(count: 20)
        do {
            let outbox = try Self.outbox(directory)
            for fix in fixes { try outbox.add(fix) }
            outbox.acknowledge(outbox.takeUnsent(window: 5).map(\.sequence))
        }
        // One flipped byte: the checksum fails.
        let cursor = directory.file("outbox.cursor")
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: cursor)))
        bytes[13] ^= 0xFF
        try Data(bytes).write(to: URL(fileURLWithPath: cursor))
        let reopened = try Self.outbox(directory)
        #expect(reopened.problem?.message.contains("damaged") == true)
        #expect(reopened.counts.queued == 20)
    }
}

@Suite("uplink URLs and OwnTracks messages")
struct UplinkEndpointTests {
    @Test("a full URL gives every part, and defaults fill what it leaves out")
    func aFullURLIsRead() throws {
        let endpoint = try UplinkEndpoint(
            parsing: "mqtt://tracker@broker.example:1884/alice/pi?format=owntracks&interval=30&distance=50&accuracy=25&window=5&queue=1000&tid=Pi")
        #expect(endpoint.host == "broker.example")
        #expect(endpoint.port == 1884)
        #expect(endpoint.username == "tracker")
        #expect(endpoint.topic == "owntracks/alice/pi")
        #expect(endpoint.interval == 30)
        #expect(endpoint.distance == 50)
        #expect(endpoint.accuracy == 25)
        #expect(endpoint.window == 5)
        #expect(endpoint.queue == 1000)
        #expect(endpoint.trackerID == "Pi")
        let plain = try UplinkEndpoint(parsing: "mqtt://localhost/bob/car")
        #expect(plain.port == 1883)
        #expect(plain.interval == 0)
        #expect(plain.trackerID == "ar")
        #expect(plain.window == 10)
        #expect(try UplinkEndpoint(parsing: "mqtts://localhost/bob/car?ca-file=/etc/ca.pem").port == 8883)
        let tracker = try UplinkEndpoint(parsing: "mqtt://localhost/kitchen_pi?format=homeassistant&interval=10")
        #expect(tracker.format == .homeassistant)
        #expect(tracker.device == "kitchen_pi")
        #expect(tracker.topic == "locationd/kitchen_pi/attributes")
        #expect(tracker.name.hasPrefix("homeassistant-kitchen_pi@localhost-1883-"))
    }

    @Test("HTTP URLs: OwnTracks to a Recorder and Traccar, each with its request URL, default port and a name of its own")
    func httpURLsAreRead() throws {
        let recorder = try UplinkEndpoint(parsing: "https://me@owntracks.example/pub?user=alice&device=pi&timeout=5")
        #expect(recorder.usesHTTP && recorder.usesTLS)
        #expect(recorder.port == 443)
        #expect(recorder.format == .owntracks)
        #expect(recorder.requestURL == "https://owntracks.example:443/pub?u=alice&d=pi")
        #expect(recorder.topic == "owntracks/alice/pi")
        #expect(recorder.timeout == 5)
        #expect(recorder.window == 1)
        let traccar = try UplinkEndpoint(parsing: "http://traccar.example:5055/?format=traccar&id=my%20pi")
        #expect(traccar.port == 5055)
        #expect(traccar.device == "my pi")
        #expect(traccar.requestURL == "http://traccar.example:5055/")
        #expect(traccar.name.hasPrefix("traccar-my_pi@traccar.example-5055-"))
        #expect(try UplinkEndpoint(parsing: "http://traccar/?format=traccar&id=x").port == 80)
        // The same user and device over MQTT and over HTTP, to the same host and port: two outboxes.
        let mqtt = try UplinkEndpoint(parsing: "mqtt://owntracks.example:443/alice/pi")
        #expect(mqtt.name != recorder.name)
        #expect(mqtt.name.hasPrefix("owntracks-alice-pi@owntracks.example-443-"))
    }

    @Test("a Traccar body carries all six coordinates, -1 for an unknown speed or heading, and the fix time to the millisecond")
    func aTraccarBodyIsAsTraccarReadsIt() throws {
        var fix = LocationFixtures.walk(3)
        fix.speed = nil
        fix.course = nil
        fix.altitude = nil
        fix.horizontalAccuracy = nil
        fix.hdop = nil
        let bytes = TraccarMessage.location(fix, deviceID: "pi \"1\"")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        #expect(object["device_id"] as? String == "pi \"1\"")
        let location = try #require(object["location"] as? [String: Any])
        #expect(location["timestamp"] as? String == RFC3339.string(from: fix.timestamp))
        let coords = try #require(location["coords"] as? [String: Any])
        #expect(Set(coords.keys) == ["latitude", "longitude", "accuracy", "speed", "heading", "altitude"])
        #expect(coords["speed"] as? Double == -1)
        #expect(coords["heading"] as? Double == -1)
        #expect(coords["altitude"] as? Double == 0)
        #expect(coords["accuracy"] as? Double == Double(OwnTracksMessage.unknownAccuracy))
        #expect(abs((coords["latitude"] as? Double ?? 0) - fix.latitude) < 1e-7)
        fix.speed = 2.5
        fix.course = 720.5
        let moving = try #require(try JSONSerialization.jsonObject(with: Data(TraccarMessage.location(fix, deviceID: "pi"))) as? [String: Any])
        let movingCoords = try #require((moving["location"] as? [String: Any])?["coords"] as? [String: Any])
        #expect(movingCoords["speed"] as? Double == 2.5)
        #expect(movingCoords["heading"] as? Double == 0.5)
        #expect((moving["location"] as? [String: Any])?["is_moving"] as? Bool == true)
    }

    @Test(
        "every malformed part is refused with a line that names it",
        arguments: [
            ("", "not a URL"),
            ("broker/alice/pi", "not a URL"),
            ("ftp://broker/alice/pi", "scheme"),
            ("http://recorder/pub?format=owntracks&user=alice", "user= and device="),
            ("http://traccar:5055/?format=traccar", "id=DEVICE"),
            ("http://traccar:5055/?format=traccar&id=x&user=a", "user and device are for format=owntracks"),
            ("http://recorder/pub?user=a&device=b&id=c", "id is for format=traccar"),
            ("http://broker/?format=homeassistant&id=x", "over MQTT"),
            ("mqtt://broker/alice/pi?format=traccar", "over HTTP"),
            ("mqtt://broker/alice/pi?user=a", "for http://"),
            ("mqtt://broker/alice/pi?timeout=5", "timeout is for http"),
            ("http://recorder/pub?user=a&device=b&window=3", "window is for MQTT"),
            ("http://traccar/?format=traccar&id=a%0Ab", "control character"),
            ("http://recorder/pub?user=a/b&device=c", "+, # or /"),
            ("http://traccar/?format=traccar&id=x&timeout=1e9", "above"),
            ("http://traccar/?format=traccar&id=x&timeout=nan", "not a number"),
            ("http://traccar/?format=traccar&id=x&ca-file=/ca.pem", "mqtts:// and https://"),
            ("http://recorder/pub?user=a&device=b&password-file=/pw", "user name"),
            ("https://me:secret@recorder/pub?user=a&device=b", "password-file"),
            ("mqtt://user:secret@broker/alice/pi", "password-file"),
            ("mqtt:///alice/pi", "host"),
            ("mqtt://broker:0/alice/pi", "port"),
            ("mqtt://broker:70000/alice/pi", "port"),
            ("mqtt://broker/alice", "/USER/DEVICE"),
            ("mqtt://broker/alice/pi/extra", "/USER/DEVICE"),
            ("mqtt://broker//pi", "/USER/DEVICE"),
            ("mqtt://broker/al+ce/pi", "+, #"),
            ("mqtt://broker/alice/p%23i", "+, #"),
            ("mqtt://broker/alice/p%00i", "+, #"),
            ("mqtt://broker/alice/pi\u{7}", "control character"),
            ("mqtt://broker/alice/p\ni", "control character"),
            ("mqtt://broker/\(String(repeating: "a", count: 200))/pi", "longer than"),
            ("mqtt://broker/alice/pi?format=gpx", "format"),
            ("mqtt://broker/alice/pi?intervall=3", "unknown key"),
            ("mqtt://broker/alice/pi?interval=3&interval=4", "twice"),
            ("mqtt://broker/alice/pi?interval=", "no value"),
            ("mqtt://broker/alice/pi?interval=-1", "negative"),
            ("mqtt://broker/alice/pi?interval=nan", "not a number"),
            ("mqtt://broker/alice/pi?interval=inf", "infinite"),
            ("mqtt://broker/alice/pi?interval=1e300", "above"),
            ("mqtt://broker/alice/pi?distance=0", "zero"),
            ("mqtt://broker/alice/pi?window=0", "zero"),
            ("mqtt://broker/alice/pi?window=2.5", "whole"),
            ("mqtt://broker/alice/pi?queue=1e9", "above"),
            ("mqtt://broker/alice/pi?max-age=10", "below"),
            ("mqtt://broker/alice/pi?max-age=nan", "not a number"),
            ("http://traccar/?format=traccar&id=x&max-age=-1", "negative"),
            ("mqtt://bob:secret/x@broker/alice/pi", "an @ after the host"),
            ("mqtt://bob:se?cret@broker/alice/pi", "(in 'mqtt://bob:***@broker"),
            ("mqtt://me@broker/alice/pi?password-file=/pw%00x", "control character"),
            ("mqtts://broker/alice/pi?ca-file=/ca%0A.pem", "control character"),
            ("mqtt://broker/pi?format=homeassistant&max-age=3600", "keeps none"),
            ("mqtt://broker/alice/pi?tid=abc", "tid"),
            ("mqtt://broker/alice/pi?ca-file=/ca.pem", "mqtts"),
            ("mqtt://broker/alice/pi?password-file=/pw", "user name"),
            ("mqtt://broker/alice/pi#here", "fragment"),
            ("mqtt://broker/alice/pi?format=homeassistant", "/DEVICE"),
            ("mqtt://broker:99999999999999999999999/alice/pi", "port"),
            ("mqtt://broker:1883x/alice/pi", "not a valid URL"),
            ("mqtt://broker:/alice/pi", "port"),
            ("mqtt://broker/a%0Ab/pi", "control character"),
            ("mqtt://broker/alice/p%7Fi", "control character"),
            ("mqtt://broker/alice/p%C2%80i", "control character"),
            ("mqtt://broker/alice/p%EF%BF%BFi", "noncharacter"),
            ("mqtt://broker/?format=homeassistant", "/DEVICE"),
            ("mqtt://broker/my%20pi?format=homeassistant", "letters, digits"),
            ("https://me%3Asecret@recorder/pub?user=a&device=b", "password-file"),
            ("mqtt://[zz]/alice/pi", "IPv6 address in brackets"),
            ("mqtt://../alice/pi", "not a host name"),
            ("mqtt://-broker/alice/pi", "not a host name"),
            ("mqtt://broker..lan/alice/pi", "not a host name"),
            ("mqtt://999.1.1.1/alice/pi", "not a host name"),
            ("mqtt://10.0.0/alice/pi", "not a host name"),
            ("mqtt://[1:2:3:4:5:6:7:8:9:10]/alice/pi", "not a host name"),
            ("mqtt://[fe80::1%25]/alice/pi", "not a host name"),
            ("mqtt://a%2Fb/alice/pi", "not a host name"),
            ("http://a%00b/?format=traccar&id=x", "not a host name"),
            ("mqtt://br\u{F6}ker/alice/pi", "xn--"),
            ("mqtt://broker/alice/my pi", "space"),
            ("https://recorder/pub?user=a&device=b&password-file=/pw", "https://USER@HOST"),
            ("mqtts://broker/alice/pi?ca-file=/\(String(repeating: "d", count: 5000))", "longer than"),
        ])
    func malformedURLsAreRefused(url: String, says: String) {
        do {
            _ = try UplinkEndpoint(parsing: url, place: "--uplink 1")
            Issue.record("\(url.debugDescription) was taken")
        } catch {
            #expect(error.code == .invalidConfiguration)
            #expect(error.message.hasPrefix("--uplink 1"), "\(error.message)")
            #expect(error.message.contains(says), "\(url.debugDescription): \(error.message)")
            #expect(!error.message.contains("\n"), "one line")
            #expect(!error.message.contains("secret"), "a password is never repeated")
        }
    }

    @Test("spaces around a URL are dropped; an IPv6 address in brackets and a name with _ and - are hosts")
    func urlsAroundTheEdgesAreTaken() throws {
        let trimmed = try UplinkEndpoint(parsing: "  mqtt://broker/alice/pi \t")
        #expect(trimmed.text == "mqtt://broker/alice/pi" && trimmed.device == "pi")
        let ipv6 = try UplinkEndpoint(parsing: "mqtt://[::1]:1884/alice/pi")
        #expect(ipv6.port == 1884 && ipv6.addressHost == "::1", "a resolver takes the address without brackets")
        #expect(try UplinkEndpoint(parsing: "mqtt://[fe80::1%25eth0]/alice/pi").addressHost == "fe80::1%eth0", "a zone, as getaddrinfo takes it")
        #expect(try UplinkEndpoint(parsing: "mqtt://broker.lan./alice/pi").host == "broker.lan.")
        #expect(try UplinkEndpoint(parsing: "mqtt://broker/alice/pi\n").device == "pi", "a newline at the end, as a YAML block leaves it")
        #expect(
            try UplinkEndpoint(parsing: "mqtt://Broker./alice/pi").sameReceiverKey == UplinkEndpoint(parsing: "mqtt://broker/alice/pi?interval=5").sameReceiverKey,
            "one receiver however its host is spelt")
        #expect(try UplinkEndpoint(parsing: "http://my_host-1.lan:5055/?format=traccar&id=7").host == "my_host-1.lan")
        #expect(try UplinkEndpoint(parsing: "mqtt://192.168.1.10/alice/pi").host == "192.168.1.10")
    }

    @Test("a CA file that is a FIFO, a directory, empty, missing, not a PEM certificate or holding a private key is refused at once, never waited on")
    func hostileCAFilesAreRefused() throws {
        let directory = TemporaryDirectory()
        let fifo = directory.file("fifo")
        #expect(mkfifo(fifo, 0o644) == 0)
        let empty = directory.file("empty")
        _ = FileManager.default.createFile(atPath: empty, contents: Data())
        let der = directory.file("der")
        _ = FileManager.default.createFile(atPath: der, contents: Data([0x30, 0x82, 0x01, 0x0A]))
        let other = directory.file("other.pem")
        try "-----BEGIN FOO-----\nMIIB\n-----END FOO-----\n".write(toFile: other, atomically: true, encoding: .utf8)
        let key = directory.file("key.pem")
        try "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n"
            .write(toFile: key, atomically: true, encoding: .utf8)
        let cases = [(fifo, "not a regular file"), (directory.path, "not a regular file"), (empty, "is empty"),
                     (directory.file("none"), "cannot be opened"), (der, "no PEM"), ("/dev/zero", "not a regular file"),
                     (other, "no PEM certificate"), (key, "holds a private key")]
        for (path, says) in cases {
            for scheme in ["mqtts://broker/alice/pi?", "https://traccar/?format=traccar&id=1&"] {
                let endpoint = try UplinkEndpoint(parsing: "\(scheme)ca-file=\(path)")
                do {
                    try endpoint.checkFiles()
                    Issue.record("\(path) was taken")
                } catch {
                    #expect(error.code == .invalidConfiguration)
                    #expect(error.message.contains("CA file") && error.message.contains(says), "\(error.message)")
                }
            }
        }
        let pem = directory.file("ca.pem")
        try "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".write(toFile: pem, atomically: true, encoding: .utf8)
        try UplinkEndpoint(parsing: "mqtts://broker/alice/pi?ca-file=\(pem)").checkFiles()
        // As `openssl x509 -text` writes it: pages of text, then the PEM block.
        let text = directory.file("ca-text.pem")
        try (String(repeating: "    Modulus: 00:c3:5a:...\n", count: 400) + "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
            .write(toFile: text, atomically: true, encoding: .utf8)
        try UplinkEndpoint(parsing: "mqtts://broker/alice/pi?ca-file=\(text)").checkFiles()
    }

    @Test("a password file that is a FIFO, open to others, empty or missing is refused without reading or quoting it")
    func hostilePasswordFilesAreRefused() throws {
        let directory = TemporaryDirectory()
        let fifo = directory.file("fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let open = directory.file("open")
        try "secret\n".write(toFile: open, atomically: true, encoding: .utf8)
        chmod(open, 0o644)
        let empty = directory.file("empty")
        _ = FileManager.default.createFile(atPath: empty, contents: Data(), attributes: [.posixPermissions: 0o600])
        let nul = directory.file("nul")
        _ = FileManager.default.createFile(atPath: nul, contents: Data("a\u{0}b\n".utf8), attributes: [.posixPermissions: 0o600])
        let others = directory.file("others")
        _ = FileManager.default.createFile(atPath: others, contents: Data("secret\n".utf8), attributes: [.posixPermissions: 0o600])
        #expect(chown(others, geteuid() == 0 ? 65534 : 0, getegid()) == 0 || geteuid() != 0)
        var cases = [(fifo, "not a regular file"), (open, "chmod 600"), (empty, "no password"), (directory.file("none"), "cannot be opened"),
                     ("/proc/self/environ", "no password"), (nul, "NUL")]
        if geteuid() == 0 { cases.append((others, "belongs to uid 65534")) }
        for (path, says) in cases {
            let endpoint = try UplinkEndpoint(parsing: "mqtt://me@broker/alice/pi?password-file=\(path)")
            do {
                _ = try endpoint.readPassword()
                Issue.record("\(path) was read")
            } catch {
                #expect(error.message.contains(says), "\(error.message)")
                #expect(!error.message.contains("secret"))
            }
        }
        let good = directory.file("good")
        _ = FileManager.default.createFile(atPath: good, contents: Data("s3cret\r\nignored\n".utf8), attributes: [.posixPermissions: 0o600])
        #expect(try UplinkEndpoint(parsing: "mqtt://me@broker/alice/pi?password-file=\(good)").readPassword() == "s3cret")
    }

    @Test("an OwnTracks location carries the fix time, a whole accuracy of at least 1, km/h and the tracker id")
    func anOwnTracksLocationIsAsTheReceiversReadIt() throws {
        var fix = LocationFixtures.walk(3)
        fix.horizontalAccuracy = 0.2
        fix.speed = 10
        fix.course = 359.7
        let bytes = OwnTracksMessage.location(fix, trackerID: "pi", createdAt: Date(timeIntervalSince1970: 1_800_000_000.9))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        #expect(object["_type"] as? String == "location")
        #expect(object["tst"] as? Int == Int(fix.timestamp.timeIntervalSince1970))
        #expect(object["acc"] as? Int == 1)
        #expect(object["vel"] as? Int == 36)
        #expect(object["cog"] as? Int == 0)
        #expect(object["tid"] as? String == "pi")
        #expect(object["created_at"] as? Int == 1_800_000_000)
        #expect(abs((object["lat"] as? Double ?? 0) - fix.latitude) < 1e-7)
        // Without an accuracy: estimated from HDOP, else the documented stand-in; never absent.
        fix.horizontalAccuracy = nil
        fix.hdop = 1.3
        #expect(OwnTracksMessage.accuracy(of: fix) == 7)
        fix.hdop = nil
        #expect(OwnTracksMessage.accuracy(of: fix) == OwnTracksMessage.unknownAccuracy)
        fix.horizontalAccuracy = .infinity
        #expect(OwnTracksMessage.accuracy(of: fix) == OwnTracksMessage.unknownAccuracy)
    }
}

@Suite("the uplinks list of the configuration file")
struct UplinkConfigurationTests {
    @Test("a list of URLs is read in order; anything else under uplinks is one line naming the key")
    func theUplinksListIsReadOrRefused() async throws {
        let directory = TemporaryDirectory()
        let good = directory.file("good.yaml")
        try "uplinks:\n  - mqtt://broker/alice/pi\n  - mqtt://broker/alice/car?interval=30\n".write(toFile: good, atomically: true, encoding: .utf8)
        let loaded = try await ServiceConfiguration.load(path: good, environment: [:])
        #expect(loaded.uplinks == ["mqtt://broker/alice/pi", "mqtt://broker/alice/car?interval=30"])
        #expect(loaded.uplinksPlace == "\(good): uplinks")
        for (text, says) in [("uplinks: 5\n", "a single value"), ("uplinks:\n  - mqtt://x/a/b\n  - {a: 1}\n", "a list of URLs"),
                             ("uplinks: {a: 1}\n", "a section of keys")] {
            let path = directory.file("bad.yaml")
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            do {
                _ = try await ServiceConfiguration.load(path: path, environment: [:])
                Issue.record("\(text.debugDescription) was taken")
            } catch {
                #expect(error.code == .invalidConfiguration)
                #expect(error.message.contains("uplinks expects a list of URLs"), "\(error.message)")
                #expect(error.message.contains(says), "\(error.message)")
            }
        }
        let empty = directory.file("empty.yaml")
        try "uplinks:\n".write(toFile: empty, atomically: true, encoding: .utf8)
        #expect(try await ServiceConfiguration.load(path: empty, environment: [:]).uplinks.isEmpty)
    }
}

@Suite("uplink names and outbox files")
struct UplinkIdentityTests {
    @Test("uplinks whose parts differ never share a name, an outbox or a client id, whatever characters the parts hold")
    func differentPartsNeverShareAName() throws {
        let pairs = [
            ("mqtt://broker/a-b/c", "mqtt://broker/a/b-c"),
            ("mqtt://broker/%C3%A4/x", "mqtt://broker/%C3%B6/x"),
            ("mqtt://localhost/dup/pi", "mqtt://127.0.0.1/dup/pi"),
            ("mqtt://broker/alice/pi", "mqtt://broker:1884/alice/pi"),
            ("mqtt://broker/pi?format=homeassistant", "mqtt://broker/x/pi"),
        ]
        for (first, second) in pairs {
            let a = try UplinkEndpoint(parsing: first), b = try UplinkEndpoint(parsing: second)
            #expect(a.name != b.name, "\(first) and \(second): \(a.name)")
            #expect(a.clientID != b.clientID, "\(first) and \(second): \(a.clientID)")
        }
        let endpoint = try UplinkEndpoint(parsing: "mqtt://broker/alice/pi")
        #expect(endpoint.clientID.count == 23)
        #expect(endpoint.clientID.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) })
        #expect(endpoint.name == (try UplinkEndpoint(parsing: "mqtt://broker/alice/pi?interval=30")).name, "a policy is not the receiver")
        #expect(endpoint.name.hasPrefix("owntracks-alice-pi@broker-1883-"))
        #expect(try UplinkEndpoint(parsing: "mqtt://broker/alice/b-c").trackerID == "bc")
    }

    @Test("a cursor planted as a link (or anything but a file) refuses the outbox rather than never being written")
    func aPlantedCursorIsRefused() throws {
        let directory = TemporaryDirectory()
        #expect(symlink(directory.file("elsewhere"), directory.file("outbox.cursor")) == 0)
        do {
            _ = try UplinkOutbox(path: directory.file("outbox"), capacity: 10)
            Issue.record("the outbox was opened")
        } catch {
            #expect(error.code == .journalIO)
            #expect(error.message.contains("outbox.cursor"), "\(error.message)")
        }
        #expect(!FileManager.default.fileExists(atPath: directory.file("elsewhere")), "nothing written through the link")
    }
}

/// The outbox of region transitions: each waits on disk until acknowledged, and a damaged file keeps its good
/// events and is kept aside.
@Suite("the uplink's events outbox")
struct EventOutboxTests {
    static func event(_ index: Int, _ kind: RegionEvent.Kind) -> LocationEvent {
        .region(RegionEvent(region: "spot \(index)", kind: kind, location: LocationFixtures.walk(index)))
    }

    @Test("what was not acknowledged is there after a reopen, in order; what was acknowledged is not; the file is 0600")
    func reopenKeepsTheUnacknowledged() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("events")
        let outbox = try EventOutbox(path: path)
        for index in 0..<4 { outbox.add(Self.event(index, index % 2 == 0 ? .enter : .exit)) }
        let first = try #require(outbox.takeUnsent())
        let second = try #require(outbox.takeUnsent())
        #expect(first.event == Self.event(0, .enter) && second.event == Self.event(1, .exit))
        outbox.acknowledge(second.sequence)
        outbox.unsend(first.sequence)
        #expect(outbox.counts.queued == 3 && outbox.counts.acknowledged == 1)
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o600)

        let reopened = try EventOutbox(path: path)
        #expect(reopened.problem == nil)
        var events: [LocationEvent] = []
        while let entry = reopened.takeUnsent(), events.count < 10 { events.append(entry.event) }
        #expect(events == [Self.event(0, .enter), Self.event(2, .enter), Self.event(3, .exit)])
    }

    @Test("a full outbox drops its oldest and counts them")
    func boundedByCapacity() throws {
        let outbox = try EventOutbox(path: nil, capacity: 3)
        for index in 0..<5 { outbox.add(Self.event(index, .enter)) }
        #expect(outbox.counts.queued == 3 && outbox.counts.dropped == 2)
        #expect(outbox.takeUnsent()?.event == Self.event(2, .enter))
    }

    @Test("a line of junk is left out, the file as it was kept as .damaged and written again without it; a link is not followed")
    func damageIsKeptAside() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("events")
        let outbox = try EventOutbox(path: path)
        outbox.add(Self.event(0, .enter))
        var bytes = try #require(FileManager.default.contents(atPath: path))
        bytes += Data("\u{1}\u{2}junk\n".utf8)
        try bytes.write(to: URL(fileURLWithPath: path))
        let reopened = try EventOutbox(path: path)
        #expect(reopened.problem?.contains("1 line") == true)
        #expect(reopened.counts.queued == 1)
        #expect(FileManager.default.fileExists(atPath: path + ".damaged"))
        // The file itself holds only the good event now: the next start says nothing.
        #expect(try EventOutbox(path: path).problem == nil)

        let link = directory.file("linked")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: path)
        let linked = try EventOutbox(path: link)
        #expect(linked.problem?.contains("link") == true)
        #expect(linked.counts.queued == 0)
    }
}
