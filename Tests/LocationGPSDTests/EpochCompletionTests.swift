import Foundation
import LocationCore
import Testing
@testable import LocationGPSD

/// When an epoch is delivered: as soon as its last TPV is in, once the receiver's pattern is known.
@Suite("Epoch completion")
struct EpochCompletionTests {
    /// 2024-05-01T06:00:00Z.
    static let base: Int64 = 1_714_543_200

    static func time(_ milliseconds: Int) -> GPSDTime {
        GPSDTime(seconds: base + Int64(milliseconds / 1000), nanoseconds: Int64(milliseconds % 1000) * 1_000_000)
    }

    static func tpv(_ milliseconds: Int, speed: Double? = nil, track: Double? = nil) -> GPSDReport {
        .fix(GPSDFix(mode: 3, time: time(milliseconds), latitude: 51.5, longitude: -0.1, speed: speed, track: track, device: "/dev/ttyACM0"))
    }

    static func locations(_ events: [LocationSourceEvent]) -> [Location] {
        events.compactMap { if case .location(let location) = $0 { location } else { nil } }
    }

    /// A merger whose system clock sits at the test data's time, so no rollover signature can match.
    static func merger() -> EpochMerger {
        EpochMerger(settle: .milliseconds(500), systemNow: { Date(timeIntervalSince1970: TimeInterval(base)) })
    }

    @Test("one TPV per epoch at 1 Hz: once 2 s of epochs are seen, each epoch is delivered on its own TPV")
    func singleReportEpochsAreDeliveredAtOnce() {
        var merger = Self.merger()
        var deliveredOnArrival: [Int] = []
        for second in 0..<8 {
            let arrival = Duration.seconds(second)
            let delivered = Self.locations(merger.accept(Self.tpv(second * 1000), at: arrival))
            if delivered.contains(where: { $0.timestamp == Self.time(second * 1000).date }) { deliveredOnArrival.append(second) }
        }
        // Epochs 0…2 teach the pattern (each is delivered when the next starts); from epoch 3 on, at once.
        #expect(deliveredOnArrival == [3, 4, 5, 6, 7])
        #expect(!merger.hasPending)
    }

    @Test("two TPVs per epoch (a SiRF-II): delivered on the second, with both TPVs' values merged")
    func twoReportEpochsAreDeliveredOnTheSecond() {
        var merger = Self.merger()
        var onSecond: [Location] = []
        for second in 0..<6 {
            let start = Duration.seconds(second)
            let first = merger.accept(Self.tpv(second * 1000, speed: Double(second)), at: start)
            let second2 = merger.accept(Self.tpv(second * 1000, track: 90), at: start + .milliseconds(80))
            if second >= 3 {
                let epoch = Self.time(second * 1000).date
                #expect(!Self.locations(first).contains { $0.timestamp == epoch }, "epoch \(second) is held after its first TPV")
                onSecond += Self.locations(second2)
            }
        }
        #expect(onSecond.count == 3)
        #expect(onSecond.map(\.speed) == [3, 4, 5])
        #expect(onSecond.allSatisfy { $0.course == 90 })
    }

    @Test("a 10 Hz receiver whose whole-second epochs have two TPVs (GPS+IMU): every epoch carries its last TPV's values")
    func occasionalSecondReportIsNeverCutOff() {
        var merger = Self.merger()
        var delivered: [Location] = []
        for tenth in 0..<60 {
            let arrival = Duration.milliseconds(tenth * 100)
            delivered += Self.locations(merger.accept(Self.tpv(tenth * 100, speed: 1), at: arrival))
            if tenth % 10 == 0 {
                delivered += Self.locations(merger.accept(Self.tpv(tenth * 100, speed: 2), at: arrival + .milliseconds(5)))
            }
            if let deadline = merger.settleDeadline, deadline <= arrival + .milliseconds(99) { delivered += Self.locations(merger.flush()) }
        }
        delivered += Self.locations(merger.flush())
        #expect(delivered.count == 60)
        let wholeSeconds = delivered.filter { Int($0.timestamp.timeIntervalSince1970 * 10) % 10 == 0 }
        #expect(wholeSeconds.count == 6)
        #expect(wholeSeconds.allSatisfy { $0.speed == 2 }, "\(wholeSeconds.map(\.speed))")
        #expect(merger.memory.pattern.lateReports == 0)
    }

    @Test("an epoch with more TPVs than learned: the late TPV is counted, and the next epochs wait for it")
    func aLateReportGrowsThePattern() {
        var merger = Self.merger()
        for second in 0..<4 { _ = merger.accept(Self.tpv(second * 1000), at: .seconds(second)) }
        #expect(merger.memory.pattern.expectedReports == 1)
        let early = merger.accept(Self.tpv(4000, speed: 1), at: .seconds(4))
        #expect(Self.locations(early).count == 1)
        let late = merger.accept(Self.tpv(4000, speed: 2), at: .seconds(4) + .milliseconds(50))
        #expect(late.isEmpty, "never delivered twice")
        #expect(merger.memory.pattern.lateReports == 1)
        #expect(merger.memory.pattern.expectedReports == 2)
        #expect(Self.locations(merger.accept(Self.tpv(5000, speed: 1), at: .seconds(5))).isEmpty, "held for its second TPV")
        #expect(merger.settleDeadline == .seconds(5) + .milliseconds(150), "three times the widest gap seen")
        #expect(Self.locations(merger.accept(Self.tpv(5000, speed: 2), at: .seconds(5) + .milliseconds(50))).map(\.speed) == [2])
    }

    @Test("without a pattern the held epoch waits the configured settle time; a 1 ms earlier TPV stays in its epoch")
    func unknownPatternFallsBackToTheSettleTime() {
        var merger = Self.merger()
        #expect(merger.accept(Self.tpv(1000), at: .seconds(1)) == [.status(.hasFix)])
        #expect(merger.settleDeadline == .seconds(1) + .milliseconds(500))
        #expect(merger.accept(Self.tpv(999), at: .seconds(1) + .milliseconds(1)).isEmpty)
        let flushed = Self.locations(merger.flush())
        #expect(flushed.map(\.timestamp) == [Self.time(1000).date])
    }

    @Test("a settle time shorter than the gap between an epoch's TPVs: the late TPVs teach the pattern, then every epoch has both")
    func settleShorterThanTheGapIsCorrected() {
        let now = Date(timeIntervalSince1970: TimeInterval(Self.base))
        var merger = EpochMerger(settle: .milliseconds(1), systemNow: { now })
        var complete: [Location] = []
        for second in 0..<10 {
            let start = Duration.seconds(second)
            var delivered = Self.locations(merger.accept(Self.tpv(second * 1000, speed: 9), at: start))
            // The loop of the source: deliver the held epoch when its settle time has passed.
            if let deadline = merger.settleDeadline, deadline < start + .milliseconds(80) { delivered += Self.locations(merger.flush()) }
            delivered += Self.locations(merger.accept(Self.tpv(second * 1000, speed: 1, track: 90), at: start + .milliseconds(80)))
            if second >= 5 { complete += delivered }
        }
        #expect(complete.count == 5)
        let whole = complete.filter { $0.speed == 1 && $0.course == 90 }
        #expect(whole.count == 5, "\(complete)")
    }

    @Test("a receiver clock stuck at one time while the fixes move: every fix is delivered, and the stuck clock said once")
    func stuckClockNeverSilences() {
        var merger = Self.merger()
        var events: [LocationSourceEvent] = []
        for second in 0..<4 { events += merger.accept(Self.tpv(second * 1000), at: .seconds(second)) }
        for second in 4..<10 {
            events += merger.accept(
                .fix(GPSDFix(mode: 3, time: Self.time(3000), latitude: 51.5 + Double(second) * 1e-4, longitude: -0.1, device: "/dev/ttyACM0")),
                at: .seconds(second))
        }
        let latitudes = Self.locations(events).map(\.latitude)
        #expect(latitudes.count == 10)
        let moving: [Double] = (4..<10).map { 51.5 + Double($0) * 1e-4 }
        #expect(Array(latitudes.suffix(6)) == moving)
        let errors = events.compactMap { if case .error(let error) = $0 { error } else { nil } }
        #expect(errors.map(\.message) == ["/dev/ttyACM0's clock is stuck at 2024-05-01T06:00:03Z: its fixes keep that time; they are delivered as they come"])
    }
}
