import Foundation
import LocationControl
import LocationCore
import LocationGPSD
import LocationService
import LocationTesting
import Testing

@Suite("Service layer: configuration, addresses, scripts, event lines")
struct ServiceLayerTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test("Config/locationd.yaml parses and states exactly the defaults")
    func shippedConfiguration() async throws {
        let path = Self.root.appendingPathComponent("Config/locationd.yaml").path
        let loaded = try await ServiceConfiguration.load(path: path, environment: [:])
        let defaults = ServiceConfiguration(environment: [:])
        #expect(loaded == defaults)
        #expect(loaded.socketPath == "/run/locationd/control.sock")
        #expect(loaded.configuredSocketPath == nil)
        // Every key is documented there.
        let text = try String(contentsOfFile: path, encoding: .utf8)
        for key in ServiceConfiguration.keys {
            let leaf = String(key.name.split(separator: ".").last!)
            #expect(text.contains("\(leaf):"), "Config/locationd.yaml does not document \(key.name)")
        }
    }

    @Test("a file, then LOCATIOND_* variables, override the defaults")
    func layering() async throws {
        let directory = TemporaryDirectory()
        let path = directory.file("c.yaml")
        try "gpsd:\n  host: gps.local\n  port: 2948\nreduced:\n  interval: 15\nbackgroundLocation: off\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        let loaded = try await ServiceConfiguration.load(
            path: path,
            environment: [
                "LOCATIOND_REDUCED_INTERVAL": "20", "LOCATIOND_JOURNAL": "/tmp/j", "LOCATIOND_CONTROL_STALL_TIMEOUT": "2.5",
            ])
        #expect(loaded.gpsdHost == "gps.local")
        #expect(loaded.gpsdPort == 2948)
        #expect(loaded.reducedInterval == 20)
        #expect(loaded.backgroundLocation == false)
        #expect(loaded.journalPath == "/tmp/j")
        #expect(loaded.controlStallTimeout == 2.5)
    }

    @Test("gpsd reconnection and watchdog timing come from the file, LOCATIOND_* variables, and are checked")
    func gpsdTiming() async throws {
        let directory = TemporaryDirectory()
        let path = directory.file("g.yaml")
        try "gpsd:\n  reconnectDelay: 0.1\n  maxReconnectDelay: 2\n".write(toFile: path, atomically: true, encoding: .utf8)
        let loaded = try await ServiceConfiguration.load(path: path, environment: ["LOCATIOND_GPSD_WATCHDOG": "3"])
        #expect(loaded.gpsdConfiguration.reconnectDelay == .milliseconds(100))
        #expect(loaded.gpsdConfiguration.maximumReconnectDelay == .seconds(2))
        #expect(loaded.gpsdConfiguration.watchdogTimeout == .seconds(3))
        var settings = loaded
        settings.gpsdMaxReconnectDelay = 0.05
        #expect { try settings.validate() } throws: { error in
            (error as? LocationError)?.message == "gpsd maximum reconnect delay 0.05 s is below the reconnect delay 0.1 s"
        }
        settings = loaded
        settings.gpsdWatchdog = 0
        #expect(throws: LocationError(.invalidConfiguration, "gpsd watchdog: 0 is zero; use 0.1…86400 s")) { try settings.validate() }
    }

    @Test("bad configuration gets one clear error naming the file and key")
    func badConfiguration() async throws {
        let directory = TemporaryDirectory()
        let path = directory.file("bad.yaml")
        try "reduced:\n  interval: soon\n".write(toFile: path, atomically: true, encoding: .utf8)
        await #expect { _ = try await ServiceConfiguration.load(path: path, environment: [:]) } throws: { error in
            (error as? LocationError)?.message.contains("reduced.interval: 'soon' is not a number") == true
        }
        let broken = directory.file("broken.yaml")
        try "gpsd: [unclosed\n".write(toFile: broken, atomically: true, encoding: .utf8)
        await #expect { _ = try await ServiceConfiguration.load(path: broken, environment: [:]) } throws: { error in
            (error as? LocationError)?.message.contains("is not valid YAML") == true
        }
        var settings = ServiceConfiguration()
        settings.gpsdPort = 70_000
        #expect(throws: LocationError(.invalidConfiguration, "gpsd port: 70000 is above the largest allowed value; use 1…65535")) {
            try settings.validate()
        }
    }

    @Test(
        "gpsd addresses parse as HOST[:PORT]",
        arguments: [
            ("localhost", "localhost", 2947), ("gps.local:2948", "gps.local", 2948), ("192.168.1.5", "192.168.1.5", 2947),
            ("[::1]:3000", "::1", 3000), ("::1", "::1", 2947),
        ])
    func endpoints(text: String, host: String, port: Int) throws {
        let endpoint = try GPSDEndpoint(parsing: text)
        #expect(endpoint.host == host)
        #expect(endpoint.port == port)
    }

    @Test(
        "bad gpsd addresses are refused, saying what is wrong",
        arguments: [
            ("", "the host is empty"), (":2947", "the host is empty"), ("host:0", "port '0' is not a number in 1...65535"),
            ("host:99999", "port '99999' is not a number in 1...65535"), ("host:abc", "port 'abc' is not a number in 1...65535"),
            ("[::1", "unclosed '['"), ("a b", "the host contains spaces"),
        ])
    func badEndpoints(text: String, problem: String) {
        #expect(
            throws: LocationError(
                .invalidConfiguration, "gpsd address '\(text)': \(problem); use HOST[:PORT], such as localhost:2947")
        ) { try GPSDEndpoint(parsing: text) }
    }

    @Test("lifecycle scripts parse times with units and refuse bad entries")
    func scripts() throws {
        let ok = try LifecycleScript(parsing: "90:background,2m:suspended,0.5h:active").entries
        #expect(ok.map(\.time) == [.seconds(90), .seconds(120), .seconds(1800)])
        #expect(ok.map(\.state) == [.background, .suspended, .active])
        #expect(try LifecycleScript(parsing: "").entries.isEmpty)
        for (bad, message) in [
            ("120s", "entry 1 '120s': expected TIME:STATE, such as 120s:background"),
            ("x:background", "entry 1 time: 'x' is not a time; use a number with s, m, h or ms, such as 90s or 2m"),
            ("10s:asleep", "entry 1 '10s:asleep': 'asleep' is not a state; use active, inactive, background or suspended"),
            ("20s:active,10s:background", "entry 2 '10s:background': its time comes before the previous entry's; list entries in time order"),
            ("-5s:active", "entry 1 time: -5s is negative; use 0…1000000000000 s"),
            ("10s:notRunning", "entry 1 '10s:notRunning': 'notRunning' is not a state; use active, inactive, background or suspended"),
        ] {
            #expect(throws: LocationError(.invalidConfiguration, "lifecycle script " + message), "\(bad)") {
                try LifecycleScript(parsing: bad)
            }
        }
    }

    /// The case of an event, without its values.
    static func kind(_ event: LocationEvent) -> Int {
        switch event {
        case .locations: 0
        case .lifecycle: 1
        case .applicationStopped: 2
        case .accuracyPolicy: 3
        case .sourceStatus: 4
        case .satellitesInView: 5
        case .error: 6
        case .droppedHeldLocations: 7
        case .region: 8
        case .motion: 9
        }
    }

    @Test("every event survives JSON lines both ways")
    func eventRoundTrip() throws {
        let frames: [EventFrame] = [
            EventFrame(.locations([LocationFixtures.walk(3)], .live)), EventFrame(.lifecycle(.didSuspend)),
            EventFrame(.lifecycle(.willEnterForeground)),
            EventFrame(.locations(LocationFixtures.walk(count: 12), .held(.foreground)), batchID: "k3x9q.12"),
            EventFrame(.locations(LocationFixtures.walk(count: 2), .held(.restored))),
            EventFrame(.locations(LocationFixtures.walk(count: 1), .held(.unacknowledged)), batchID: "a.1"),
            EventFrame(.error(LocationError(.noFix, "no fix \"quoted\"\nnewline"))),
            // Found by the fuzzer: a code read from a line holds what the line held, and is written escaped.
            EventFrame(.error(LocationError(LocationError.Code(rawValue: #"odd\"code\\"#), "m"))),
            EventFrame(.applicationStopped(.killedWhileSuspended)), EventFrame(.applicationStopped(.terminated)),
            EventFrame(.applicationStopped(.exitedOnLeavingForeground)),
            EventFrame(.applicationStopped(.didEnterBackgroundOverBudget(elapsed: .milliseconds(5_250), budget: .seconds(5)))),
            EventFrame(.applicationStopped(.backgroundTaskExpired(tasks: ["upload \"a\"", "sync"]))),
            EventFrame(.accuracyPolicy(.reduced)), EventFrame(.accuracyPolicy(.high)),
            EventFrame(.sourceStatus(.noFix)), EventFrame(.sourceStatus(.hasFix)), EventFrame(.sourceStatus(.ended)),
            EventFrame(.satellitesInView(0)), EventFrame(.satellitesInView(31)), EventFrame(.droppedHeldLocations(7)),
            EventFrame(.region(RegionEvent(region: "home \"1\"", kind: .enter, location: LocationFixtures.walk(4)))),
            EventFrame(.region(RegionEvent(region: "h", kind: .exit, location: LocationFixtures.walk(5)))),
            EventFrame(.region(RegionEvent(region: "ü", kind: .dwell, location: LocationFixtures.walk(6)))),
            EventFrame(.motion(MotionEvent(state: .stationary, location: LocationFixtures.walk(7)))),
            EventFrame(.motion(MotionEvent(state: .moving, location: LocationFixtures.walk(8)))),
            EventFrame(.locations(LocationFixtures.walk(count: 3), .held(.deferred))),
            EventFrame(.error(LocationError(.outlierRejected, "rejected"))),
        ]
        for frame in frames {
            let line = JSONLineEncoder.line(frame)
            #expect(line.last == 0x0A)
            #expect(line.filter { $0 == 0x0A }.count == 1, "one line")
            #expect(try LocationEventDecoder.frame(Array(line.dropLast())) == frame)
            #expect((try? JSONSerialization.jsonObject(with: Data(line))) != nil)
        }
        // Every case of LocationEvent is in the list above.
        #expect(Set(frames.map { Self.kind($0.event) }).count == 10)
        #expect(String(decoding: JSONLineEncoder.line(.lifecycle(.didEnterBackground)), as: UTF8.self)
            == #"{"type":"state","state":"background","executingInBackground":true,"policy":"reduced","event":"didEnterBackground"}"# + "\n")
        // What a client that does not know the newer keys reads stays the same: the state, the error.
        #expect(String(decoding: JSONLineEncoder.line(.droppedHeldLocations(7)), as: UTF8.self)
            == #"{"type":"error","code":"batch-overflow","message":"dropped the 7 oldest held fixes: the batch was full","dropped":7}"# + "\n")
        // A state line of an earlier version, without its event, reads as an event that leads to the state.
        #expect(try LocationEventDecoder.frame(Array(#"{"type":"state","state":"suspended"}"#.utf8)) == EventFrame(.lifecycle(.didSuspend)))
        // A newer daemon's values within known types are read as far as they can be, or skipped, never an end.
        #expect(try LocationEventDecoder.frame(Array(#"{"type":"state","state":"background","event":"didHibernate"}"#.utf8))
            == EventFrame(.lifecycle(.didEnterBackground)))
        #expect(try LocationEventDecoder.frameIfKnown(Array(#"{"type":"stopped","reason":"eaten","message":"m"}"#.utf8)) == nil)
        #expect(try LocationEventDecoder.frameIfKnown(Array(#"{"type":"policy","policy":"extreme"}"#.utf8)) == nil)
        // An event that does not lead to the state named is refused.
        #expect(throws: LocationError.self) {
            try LocationEventDecoder.frame(Array(#"{"type":"state","state":"active","event":"didSuspend"}"#.utf8))
        }
        // A held batch is one line, its locations the objects a location line has, without `type`.
        let fixes = LocationFixtures.walk(count: 2)
        #expect(String(decoding: JSONLineEncoder.line(.locations(fixes, .held(.foreground)), batchID: "a.2"), as: UTF8.self)
            == #"{"type":"batch","count":2,"reason":"foreground","id":"a.2","locations":["#
            + fixes.map { String(decoding: JSONLineEncoder.object($0), as: UTF8.self) }.joined(separator: ",") + "]}\n")
        #expect(throws: LocationError(.invalidData, #"unknown event type: {"type":"weather"}"#)) {
            try LocationEventDecoder.frame(Array(#"{"type":"weather"}"#.utf8))
        }
        // A watcher skips an event type a newer daemon sends, rather than ending.
        #expect(try LocationEventDecoder.frameIfKnown(Array(#"{"type":"weather","sky":"clear"}"#.utf8)) == nil)
        #expect(throws: LocationError(.invalidData, #"not an event line: {"kind":"weather"}"#)) {
            try LocationEventDecoder.frameIfKnown(Array(#"{"kind":"weather"}"#.utf8))
        }
    }
}
