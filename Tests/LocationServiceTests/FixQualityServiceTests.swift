import Foundation
import LocationControl
import LocationCore
import LocationService
import LocationTesting
import Testing
import locationctl

/// The correction status and satellite counts in the text and JSON formats, and the "waiting for a fix"
/// lines while the receiver has none.
@Suite("Fix quality in the output formats")
struct FixQualityServiceTests {
    static var rtkFix: Location {
        var fix = LocationFixtures.walk(3)
        fix.correctionStatus = .rtkFixed
        fix.satellitesUsed = 11
        fix.satellitesVisible = 17
        return fix
    }

    @Test("a text line shows the correction status and satellites used of those in view")
    func textLine() {
        let line = TextEventFormatter.line(Self.rtkFix)
        #expect(line.hasSuffix("3D 11/17 RTK"), "the satellites and then the status: \(line)")
        var plain = LocationFixtures.walk(3)
        plain.correctionStatus = .gps
        plain.satellitesUsed = 9
        #expect(TextEventFormatter.line(plain).hasSuffix("3D  9"), "plain GPS is not named: \(TextEventFormatter.line(plain))")
        plain.satellitesUsed = nil
        plain.satellitesVisible = 4
        #expect(TextEventFormatter.line(plain).hasSuffix("3D  –/4"), "\(TextEventFormatter.line(plain))")
        #expect(CorrectionStatus.allCases.map(TextEventFormatter.label).count == Set(CorrectionStatus.allCases.map(TextEventFormatter.label)).count)
    }

    @Test("the hand-written JSON line and the Codable encoding carry the same new fields, and read back")
    func jsonLine() throws {
        let line = String(decoding: JSONLineEncoder.line(.locations([Self.rtkFix], .live)), as: UTF8.self)
        #expect(line.contains(#""fixMode":"3D","correctionStatus":"rtk-fixed","satellitesUsed":11,"satellitesVisible":17"#), "\(line)")
        #expect(try LocationEventDecoder.frame(Array(line.utf8.dropLast())) == EventFrame(.locations([Self.rtkFix], .live)))
        let codable = try JSONSerialization.jsonObject(with: JSONEncoder().encode(Self.rtkFix)) as? [String: Any]
        let handWritten = try JSONSerialization.jsonObject(with: Data(JSONLineEncoder.object(Self.rtkFix))) as? [String: Any]
        #expect(codable?["correctionStatus"] as? String == "rtk-fixed")
        #expect(handWritten?["correctionStatus"] as? String == "rtk-fixed")
        #expect(codable?["satellitesVisible"] as? Int == 17)
        #expect(handWritten?["satellitesVisible"] as? Int == 17)
        #expect(Set(codable?.keys ?? [:].keys) == Set(handWritten?.keys ?? [:].keys))
    }

    @Test("waiting and fix events read back from JSON lines; hostile ones are refused")
    func sourceEvents() throws {
        let events: [LocationEvent] = [.satellitesInView(7), .sourceStatus(.noFix), .sourceStatus(.hasFix)]
        for event in events {
            let line = JSONLineEncoder.line(event)
            #expect(try LocationEventDecoder.frame(Array(line.dropLast())) == EventFrame(event))
        }
        #expect(String(decoding: JSONLineEncoder.line(events[0]), as: UTF8.self) == #"{"type":"satellites","satellitesVisible":7}"# + "\n")
        #expect(String(decoding: JSONLineEncoder.line(events[1]), as: UTF8.self) == #"{"type":"source","status":"no-fix"}"# + "\n")
        #expect(TextEventFormatter.line(events[0]) == "── waiting for a fix (7 satellites seen)")
        #expect(TextEventFormatter.line(.satellitesInView(1)) == "── waiting for a fix (1 satellite seen)")
        #expect(TextEventFormatter.line(events[1]) == "── waiting for a fix")
        #expect(TextEventFormatter.line(events[2]) == "── fix acquired")
        // An earlier version's line carried the satellites seen while waiting in the source line.
        #expect(try LocationEventDecoder.frame(Array(#"{"type":"source","status":"no-fix","satellitesVisible":7}"#.utf8)) == EventFrame(.satellitesInView(7)))
        // A source event with a bad status or count is refused as one; a count that is no Int is no event line.
        for (hostile, reason) in [
            (#"{"type":"source","status":"sleeping"}"#, "bad source event"), (#"{"type":"source"}"#, "bad source event"),
            (#"{"type":"source","status":"no-fix","satellitesVisible":-1}"#, "bad source event"),
            (#"{"type":"source","status":"no-fix","satellitesVisible":1e300}"#, "not an event line"),
            (#"{"type":"source","status":"no-fix","satellitesVisible":"7"}"#, "not an event line"),
            (#"{"type":"satellites"}"#, "bad satellites event"), (#"{"type":"satellites","satellitesVisible":-3}"#, "bad satellites event"),
        ] {
            let error = #expect(throws: LocationError.self, "\(hostile)") { try LocationEventDecoder.frame(Array(hostile.utf8)) }
            #expect(error?.code == .invalidData, "\(hostile): \(String(describing: error))")
            #expect(error?.message == "\(reason): \(hostile)", "\(String(describing: error))")
        }
    }

    /// A started session on a scripted source, its lines recorded (state lines left out).
    static func recordedManager() async throws -> (ScriptedLocationSource, LocationManager, Locked<[LocationEvent]>, LocationSession) {
        let source = ScriptedLocationSource()
        let events = Locked<[LocationEvent]>([])
        let session = try LocationSession(source: source, settings: ServiceConfiguration(), startState: .active) { event in
            if case .lifecycle = event { return }
            events.withLock { $0.append(event) }
        }
        let manager = session.manager
        manager.startUpdatingLocation()
        await source.waitUntilListening()
        return (source, manager, events, session)
    }

    /// Polls `condition` (real delivery threads, at most 10 s), then waits for the manager's deliveries.
    static func wait(for manager: LocationManager, _ condition: () -> Bool) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while !condition(), clock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        await manager.waitForPendingDeliveries()
    }

    @Test("while the receiver has no fix the output says it is waiting, with the satellites seen, then when the fix comes")
    func waitingForAFix() async throws {
        let (source, manager, events, recorder) = try await Self.recordedManager()
        defer { withExtendedLifetime(recorder) {} }
        source.send(.satellitesInView(4))
        source.send(.status(.noFix))
        source.send(.satellitesInView(4))
        source.send(.satellitesInView(6))
        source.send(.status(.hasFix))
        source.send(.satellitesInView(9))
        source.emit(LocationFixtures.walk(0))
        try await Self.wait(for: manager) { events.value.count >= 5 }
        // The satellites seen before the fix was lost come right after the waiting line; a count seen again
        // adds nothing, nor does one seen with a fix.
        #expect(events.value == [
            .sourceStatus(.noFix), .satellitesInView(4), .satellitesInView(6), .sourceStatus(.hasFix),
            .locations([LocationFixtures.walk(0)], .live),
        ])
        #expect(events.value.prefix(4).map(TextEventFormatter.line) == [
            "── waiting for a fix", "── waiting for a fix (4 satellites seen)", "── waiting for a fix (6 satellites seen)",
            "── fix acquired",
        ])
        manager.stopUpdatingLocation()
    }

    @Test("a source that has a fix from the start (a replay) adds no waiting or fix line")
    func noLinesWithoutWaiting() async throws {
        let (source, manager, events, recorder) = try await Self.recordedManager()
        defer { withExtendedLifetime(recorder) {} }
        source.send(.status(.hasFix))
        source.emit(LocationFixtures.walk(0))
        try await Self.wait(for: manager) { !events.value.isEmpty }
        #expect(events.value == [.locations([LocationFixtures.walk(0)], .live)])
        manager.stopUpdatingLocation()
    }

    @Test("status text says since when the source is down and why, without saying the same reason twice")
    func statusText() {
        var status = DaemonStatus(
            state: .active, executingInBackground: false, policy: .high, source: "gpsd 127.0.0.1:9", sourceStatus: .unavailable,
            lastFix: nil, lastFixAge: nil, held: 0, dropped: 0, journal: nil, watchers: 0, uptime: 3,
            sourceProblem: "source-unavailable: cannot connect to gpsd at 127.0.0.1:9: Connection refused",
            sourceDownSince: "2026-05-01T06:00:00Z", sourceDownReason: "cannot connect to gpsd at 127.0.0.1:9: Connection refused")
        let line = { status.text.split(separator: "\n").first { $0.hasPrefix("source:") }.map(String.init) ?? "" }
        #expect(line() == "source:   gpsd 127.0.0.1:9 (unavailable since 2026-05-01T06:00:00Z); last problem: source-unavailable: cannot connect to gpsd at 127.0.0.1:9: Connection refused")
        status.sourceProblem = "invalid-data: gpsd at 127.0.0.1:9 sent a TPV with eph -5"
        #expect(line() == "source:   gpsd 127.0.0.1:9 (unavailable since 2026-05-01T06:00:00Z): cannot connect to gpsd at 127.0.0.1:9: Connection refused; last problem: invalid-data: gpsd at 127.0.0.1:9 sent a TPV with eph -5")
        status.sourceDownSince = nil
        status.sourceDownReason = nil
        status.sourceStatus = .hasFix
        #expect(line() == "source:   gpsd 127.0.0.1:9 (has-fix); last problem: invalid-data: gpsd at 127.0.0.1:9 sent a TPV with eph -5")
    }

    @Test("an outage starts at the unavailable status, takes the source's reason whether it comes before or after, and ends with receiver data")
    func outageTracker() {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let reason = LocationError(.sourceUnavailable, "cannot connect to gpsd at 127.0.0.1:9: Connection refused")
        var tracker = SourceOutageTracker()
        tracker.status(.connecting, at: start)
        #expect(tracker.outage == nil)
        tracker.status(.unavailable, at: start)
        #expect(tracker.outage == .init(since: start, reason: nil))
        tracker.error(reason)
        tracker.error(LocationError(.fixLost, "not a reason to be down"))
        tracker.status(.connecting, at: start + 5)
        tracker.status(.unavailable, at: start + 9)
        #expect(tracker.outage == .init(since: start, reason: reason))
        #expect(tracker.outage?.message(source: "gpsd 127.0.0.1:9")
            == "gpsd 127.0.0.1:9 is unavailable since 2027-01-15T08:00:00.000Z: cannot connect to gpsd at 127.0.0.1:9: Connection refused")
        tracker.status(.noFix, at: start + 20)
        #expect(tracker.outage == nil)
        // A source that fails for good says why first, then becomes unavailable.
        let failed = LocationError(.sourceFailed, "replay walk.gpx failed: the file vanished")
        tracker.error(failed)
        tracker.status(.unavailable, at: start + 30)
        #expect(tracker.outage == .init(since: start + 30, reason: failed))
        tracker.status(.idle, at: start + 40)
        #expect(tracker.outage == nil)
    }
}
