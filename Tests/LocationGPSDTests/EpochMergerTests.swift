import Foundation
import LocationCore
import Testing
@testable import LocationGPSD

/// Epoch merging, staleness and fix-state events, on scripted reports (no gpsd needed).
@Suite("Epoch merging")
struct EpochMergerTests {
    static let t0 = GPSDTime(seconds: 1_714_543_200, nanoseconds: 0)
    static let t1 = GPSDTime(seconds: 1_714_543_201, nanoseconds: 0)
    static let t2 = GPSDTime(seconds: 1_714_543_202, nanoseconds: 0)

    static func fix(_ time: GPSDTime?, mode: Int = 3, speed: Double? = nil, track: Double? = nil) -> GPSDReport {
        .fix(GPSDFix(mode: mode, time: time, latitude: 51.5, longitude: -0.1, speed: speed, track: track, device: "/dev/ttyACM0"))
    }

    static func locations(_ events: [LocationSourceEvent]) -> [Location] {
        events.compactMap { if case .location(let location) = $0 { location } else { nil } }
    }

    @Test func twoTPVsOfOneEpochBecomeOneLocation() {
        var merger = EpochMerger()
        var events = merger.accept(Self.fix(Self.t0, speed: 1.5))
        events += merger.accept(Self.fix(Self.t0, track: 270))
        #expect(Self.locations(events).isEmpty, "the epoch is held until it is complete")
        events += merger.accept(Self.fix(Self.t1, speed: 2))
        let delivered = Self.locations(events)
        #expect(delivered.count == 1)
        #expect(delivered.first?.speed == 1.5)
        #expect(delivered.first?.course == 270)
        #expect(delivered.first?.timestamp == Self.t0.date)
        #expect(Self.locations(merger.flush()).first?.timestamp == Self.t1.date)
    }

    @Test func staleAndRepeatedFixesAreNeverDeliveredAgain() {
        var merger = EpochMerger()
        _ = merger.accept(Self.fix(Self.t1))
        _ = merger.flush()
        var events = merger.accept(Self.fix(Self.t1))
        events += merger.accept(Self.fix(Self.t0))
        events += merger.flush()
        #expect(Self.locations(events).isEmpty)
        // A fresh merger that remembers the last delivered time (a new connection) drops them too.
        var next = EpochMerger(memory: merger.memory)
        #expect(Self.locations(next.accept(Self.fix(Self.t1)) + next.flush()).isEmpty)
        #expect(Self.locations(next.accept(Self.fix(Self.t2)) + next.flush()).count == 1)
    }

    @Test func onlyRealFixesAreDelivered() {
        var merger = EpochMerger()
        var events = merger.accept(Self.fix(Self.t0, mode: 1))
        events += merger.accept(Self.fix(Self.t1, mode: 0))
        events += merger.accept(Self.fix(nil, mode: 3))
        events += merger.accept(.fix(GPSDFix(mode: 3, time: Self.t2, latitude: .nan, longitude: 1)))
        events += merger.flush()
        #expect(Self.locations(events).isEmpty)
        #expect(events == [.status(.noFix)])
    }

    @Test func fixLossAndRecoveryAreReported() {
        var merger = EpochMerger()
        var events = merger.accept(Self.fix(Self.t0))
        events += merger.accept(Self.fix(Self.t1, mode: 1))
        events += merger.accept(Self.fix(Self.t1, mode: 1))
        events += merger.accept(Self.fix(Self.t2))
        events += merger.flush()
        guard events.count == 6 else {
            Issue.record("unexpected events \(events)")
            return
        }
        #expect(events[0] == .status(.hasFix))
        #expect(Self.locations([events[1]]).first?.timestamp == Self.t0.date, "the held epoch is delivered before the loss")
        #expect(events[2] == .status(.noFix))
        if case .error(let error) = events[3] {
            #expect(error.code == .fixLost)
            #expect(error.message.contains("/dev/ttyACM0"))
        } else {
            Issue.record("expected a fix-lost error, got \(events[3])")
        }
        #expect(events[4] == .status(.hasFix))
        #expect(Self.locations([events[5]]).first?.timestamp == Self.t2.date)
    }

    @Test func fieldsMapAndAbsentValuesAreNil() {
        var merger = EpochMerger(fallbackSource: "/dev/fallback")
        _ = merger.accept(.sky(satellitesUsed: 9))
        _ = merger.accept(.fix(GPSDFix(
            mode: 3, time: Self.t0, latitude: 51.5, longitude: -0.1, altitudeMSL: 20, altitudeHAE: 67,
            eph: .nan, epx: 3, epy: 4, epv: 6, speed: 1, eps: 0.5, track: 90, epd: 12, climb: .nan)))
        let location = Self.locations(merger.flush()).first
        #expect(location?.altitude == 20)
        #expect(location?.ellipsoidalAltitude == 67)
        #expect(location?.horizontalAccuracy == 5, "derived from epx and epy when eph is absent")
        #expect(location?.verticalAccuracy == 6)
        #expect(location?.speed == 1)
        #expect(location?.speedAccuracy == 0.5)
        #expect(location?.course == 90)
        #expect(location?.courseAccuracy == 12)
        #expect(location?.climb == nil)
        #expect(location?.satellitesUsed == 9)
        #expect(location?.fixMode == .threeDimensional)
        #expect(location?.source == "/dev/fallback")
        #expect(location?.isSimulated == false)
    }

    @Test func twoDimensionalFixAndPreferredEph() {
        var merger = EpochMerger()
        _ = merger.accept(.fix(GPSDFix(mode: 2, time: Self.t0, latitude: 1, longitude: 2, eph: 7, epx: 3, epy: 4)))
        let location = Self.locations(merger.flush()).first
        #expect(location?.fixMode == .twoDimensional)
        #expect(location?.horizontalAccuracy == 7)
        #expect(location?.altitude == nil)
        #expect(location?.satellitesUsed == nil)
    }

    @Test func backoffDoublesUpToTheCapAndResets() {
        var backoff = ReconnectBackoff(initial: .milliseconds(250), maximum: .seconds(5))
        let delays = (0..<8).map { _ in backoff.nextDelay() }
        #expect(delays == [.milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(5), .seconds(5), .seconds(5)])
        backoff.reset()
        #expect(backoff.nextDelay() == .milliseconds(250))
        // Public: hostile values neither trap nor go below zero.
        var huge = ReconnectBackoff(initial: .seconds(Int64.max / 2), maximum: .seconds(Int64.max))
        #expect((0..<4).map { _ in huge.nextDelay() }.last == .seconds(Int64.max))
        var negative = ReconnectBackoff(initial: .seconds(-3), maximum: .seconds(-5))
        #expect(negative.nextDelay() == .zero && negative.nextDelay() == .zero)
    }

    @Test func configurationIsValidated() {
        #expect(throws: LocationError(.invalidConfiguration, "gpsd port 0 is outside 1...65535")) {
            try GPSDLocationSource(configuration: GPSDConfiguration(port: 0))
        }
        #expect(throws: LocationError(.invalidConfiguration, "maximumReconnectDelay 1.0 seconds is below reconnectDelay 2.0 seconds")) {
            try GPSDLocationSource(configuration: GPSDConfiguration(reconnectDelay: .seconds(2), maximumReconnectDelay: .seconds(1)))
        }
        #expect(throws: LocationError(.invalidConfiguration, "gpsd device path is empty (use nil for all devices)")) {
            try GPSDLocationSource(configuration: GPSDConfiguration(devicePath: ""))
        }
        let source = try? GPSDLocationSource()
        #expect(source?.name == "gpsd localhost:2947")
    }
}
