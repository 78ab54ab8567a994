import Foundation
import LocationCore
import Testing
@testable import LocationGPSD

/// Whatever the receiver's clock does, the source keeps delivering: jumps confirmed and reported once,
/// strays dropped and reported, rollovers corrected.
@Suite("Receiver clock jumps")
struct ReceiverTimelineTests {
    /// 2026-11-24T00:00:00Z: the present in these tests.
    static let now: Int64 = 1_795_478_400
    static let era = ReceiverTimeline.era

    static func tpv(_ seconds: Int64) -> GPSDReport {
        .fix(GPSDFix(mode: 3, time: GPSDTime(seconds: seconds, nanoseconds: 0), latitude: 51.5, longitude: -0.1, device: "/dev/ttyACM0"))
    }

    /// A merger that has learned one TPV per epoch, so each TPV is delivered (or judged) at once.
    static func merger(systemNow: Int64 = now) -> EpochMerger {
        var merger = EpochMerger(systemNow: { Date(timeIntervalSince1970: TimeInterval(systemNow)) })
        for second in Int64(0)..<4 { _ = merger.accept(tpv(now - 100 + second), at: .seconds(second)) }
        return merger
    }

    /// Feeds one TPV per second of arrival, fix times `times`, from arrival `start` on; returns every event.
    static func feed(_ merger: inout EpochMerger, _ times: [Int64], from start: Int = 4) -> [LocationSourceEvent] {
        var events: [LocationSourceEvent] = []
        for (index, time) in times.enumerated() { events += merger.accept(tpv(time), at: .seconds(start + index)) }
        return events
    }

    static func times(_ events: [LocationSourceEvent]) -> [Int64] {
        events.compactMap { if case .location(let location) = $0 { Int64(location.timestamp.timeIntervalSince1970.rounded()) } else { nil } }
    }

    static func errors(_ events: [LocationSourceEvent]) -> [LocationError] {
        events.compactMap { if case .error(let error) = $0 { error } else { nil } }
    }

    @Test("one TPV 1,024 weeks in the future among good ones: corrected to the present, named a rollover once, nothing silenced")
    func futureRolloverGlitchIsCorrected() {
        var merger = Self.merger()
        let start = Self.now - 96
        let events = Self.feed(&merger, [start, start + 1 + Self.era, start + 2, start + 3, start + 4])
        #expect(Self.times(events) == [start, start + 1, start + 2, start + 3, start + 4])
        let errors = Self.errors(events)
        #expect(errors.count == 1)
        #expect(errors.first?.code == .clockJump)
        #expect(errors.first?.message.contains("1024 weeks ahead of the present: a GPS week-number rollover") == true, "\(errors)")
    }

    @Test("a receiver 1,024 weeks behind (a 2007 date in 2026): every fix corrected, reported once")
    func pastRolloverIsCorrected() {
        var merger = EpochMerger(systemNow: { Date(timeIntervalSince1970: TimeInterval(Self.now)) })
        var events: [LocationSourceEvent] = []
        for second in Int64(0)..<5 { events += merger.accept(Self.tpv(Self.now - Self.era + second), at: .seconds(second)) }
        events += merger.flush()
        #expect(Self.times(events) == (0..<5).map { Self.now + $0 })
        #expect(Self.errors(events).map(\.code) == [.clockJump])
        #expect(Self.errors(events).first?.message.contains("1024 weeks behind the present") == true)
    }

    @Test("with a system clock that is no help (1970), a 1,024-week jump back is confirmed by three fixes and named a rollover")
    func rolloverWithoutTheSystemClock() {
        var merger = Self.merger(systemNow: 0)
        let glitch = Self.now + Self.era
        var events = Self.feed(&merger, [glitch])
        #expect(Self.times(events).isEmpty, "a jump is held as suspect")
        events += Self.feed(&merger, [glitch + 1, glitch + 2], from: 5)
        // Suspects confirm each other: the glitch was the new timeline after all.
        #expect(Self.times(events) == [glitch, glitch + 1, glitch + 2])
        let back = Self.feed(&merger, [Self.now + 10, Self.now + 11, Self.now + 12, Self.now + 13], from: 7)
        #expect(Self.times(back) == [Self.now + 10, Self.now + 11, Self.now + 12, Self.now + 13])
        let jump = Self.errors(back).first
        #expect(jump?.code == .clockJump)
        #expect(jump?.message.contains("jumped back") == true)
        #expect(jump?.message.contains("(1024 weeks: a GPS week-number rollover)") == true, "\(String(describing: jump))")
    }

    @Test("a single stray fix years away is dropped and reported once; its neighbours are delivered")
    func strayIsDropped() {
        var merger = Self.merger()
        let start = Self.now - 96
        let events = Self.feed(&merger, [start, start + 5 * 365 * 86_400, start + 2, start + 3])
        #expect(Self.times(events) == [start, start + 2, start + 3])
        let errors = Self.errors(events)
        #expect(errors.map(\.code) == [.invalidData])
        #expect(errors.first?.message.contains("dropped as a stray clock reading") == true)
    }

    @Test("gpsd restarted on earlier data (time goes back an hour): silent at most two epochs, then everything, reported once")
    func jumpBackIsConfirmed() {
        var merger = Self.merger()
        let earlier = Self.now - 3_700
        let events = Self.feed(&merger, [earlier, earlier + 1, earlier + 2, earlier + 3, earlier + 4])
        #expect(Self.times(events) == [earlier, earlier + 1, earlier + 2, earlier + 3, earlier + 4])
        let errors = Self.errors(events)
        #expect(errors.count == 1)
        #expect(errors.first?.code == .clockJump)
        #expect(errors.first?.message.contains("from 2026-11-23T23:58:23Z to 2026-11-23T22:58:20Z (60 minutes)") == true, "\(errors)")
    }

    @Test("a repeated or 1 ms earlier TPV of the epoch just delivered is dropped quietly")
    func repeatsAreQuiet() {
        var merger = Self.merger()
        let last = Self.now - 97
        let events = Self.feed(&merger, [last, last - 1, last])
        #expect(events.isEmpty)
    }

    @Test("times that cannot be represented never trap")
    func extremeTimesNeverTrap() {
        let low = GPSDTime(seconds: .min, nanoseconds: 0)
        let high = GPSDTime(seconds: .max, nanoseconds: 999_999_999)
        #expect(high.offset(from: low) > .zero)
        #expect(low.offset(from: high) < .zero)
        #expect(ReceiverTimeline.rolloverCorrected(high, systemNow: Date()) == nil)
        #expect(ReceiverTimeline.rolloverCorrected(low, systemNow: Date.distantFuture) == nil)
        var timeline = ReceiverTimeline(sourceName: "x")
        let location = Location(latitude: 1, longitude: 2, timestamp: Date())
        _ = timeline.judge(.init(time: low, arrival: .zero, location: location))
        let verdict = timeline.judge(.init(time: high, arrival: .seconds(1), location: location))
        #expect(verdict.deliver.isEmpty)
    }

    @Test("a receiver that sends a stray every other fix: one line for the first, then at most one a minute with a count")
    func repeatedStraysAreOneLineAMinute() {
        var merger = Self.merger()
        var times: [Int64] = []
        for second in Int64(0)..<120 { times.append(second % 2 == 0 ? Self.now - 96 + second : Self.now - 96 + second + 3_600) }
        let events = Self.feed(&merger, times)
        #expect(Self.times(events).count == 60, "every good fix is delivered")
        let reports = Self.errors(events)
        #expect(reports.count == 2, "\(reports.map(\.message))")
        #expect(reports.last?.message.hasSuffix("(and 29 more since the last report of one)") == true, "\(reports.map(\.message))")
    }
}
