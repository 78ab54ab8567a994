import Clocks
import ConcurrencyExtras
import Foundation
import LocationCore
import Testing

@testable import LocationGPX

/// The replay source on a clock: when each fix is delivered, in each mode.
@Suite struct ReplaySourceTests {
    /// Eleven points, 1 Hz except for a 0.5 s step, a duplicate and a 3 s pause.
    static let times: [Double] = [0, 1, 1.5, 2.5, 2.5, 3.5, 6.5, 7.5, 8.5, 9.5, 10.5]
    static let gpx = gpx11(track([times.enumerated().map { trkpt(47, 8 + Double($0.offset) * 1e-4, t($0.element)) }]))

    func source(_ options: GPXReplaySource.Options = .init(), gpx: String = gpx) throws -> GPXReplaySource {
        try GPXReplaySource(path: writeGPX(gpx), options: options, now: { replayStart })
    }

    // MARK: - Continuous

    @Test func pointsAreDeliveredAtTheirTrackTime() async throws {
        let events = try await runReplay(source())
        #expect(closeAll(events.deliveryTimes, Self.times.map { .s($0) }))
        #expect(events.locations.map(\.timestamp) == Self.times.map { date(t($0)) })
        #expect(events.statuses == [.hasFix, .ended])
        #expect(events.last?.event == .status(.ended))
    }

    @Test(arguments: [2.5, 0.5, 1000, 0.001])
    func speedFactorScalesTheClock(_ factor: Double) async throws {
        let events = try await runReplay(source(.init(pacing: .speedFactor(factor))))
        #expect(closeAll(events.deliveryTimes, Self.times.map { .s($0 / factor) }))
        #expect(events.locations.map(\.timestamp) == Self.times.map { date(t($0)) }, "recorded times unchanged")
    }

    @Test func deadlinesAreAbsoluteSoLateWakeUpsDoNotAddUp() async throws {
        // Every sleep wakes 70 ms late; a relative schedule would drift by 70 ms per point.
        let clock = VirtualClock(lateness: .milliseconds(70))
        let events = try await runReplay(source(), clock: clock)
        let expected = Self.times.map { Duration.s($0) }
        try #require(events.deliveryTimes.count == expected.count, "every point is delivered")
        for (delivered, due) in zip(events.deliveryTimes, expected) {
            #expect(delivered >= due && delivered <= due + .milliseconds(70), "\(delivered) for \(due)")
        }
    }

    @Test func asFastAsPossibleNeverSleeps() async throws {
        let clock = VirtualClock()
        let events = try await runReplay(source(.init(pacing: .asFastAsPossible)), clock: clock)
        #expect(events.locations.count == Self.times.count)
        #expect(events.deliveryTimes.allSatisfy { $0 == .zero })
        #expect(clock.sleeps == 0)
    }

    @Test func duplicateTimesAreDeliveredAtOnceAndFlaggedOnce() async throws {
        let gpx = gpx11(track([[trkpt(47, 8, t(0)), trkpt(47, 8, t(5)), trkpt(47, 8.1, t(5)), trkpt(47, 8.2, t(4)), trkpt(47, 8.3, t(6)), trkpt(47, 8.4, t(6))]]))
        let events = try await runReplay(source(gpx: gpx))
        #expect(closeAll(events.deliveryTimes, [0, 5, 5, 5, 6, 6].map { .s($0) }))
        let flags = events.errors.filter { $0.code == .invalidData }
        #expect(flags.count == 1, "the first run (at 5 s) is reported; the duplicate at 6 s is delivered the same way")
        #expect(flags.first?.message.contains("replay.gpx:") == true)
        // Each flag comes just before the fix it concerns.
        let index = try #require(events.firstIndex { if case .error = $0.event { true } else { false } })
        #expect(events[index + 1].location?.longitude == 8.1)
    }

    @Test func loopRunsOnAndStopsWhenCancelled() async throws {
        let source = try source(.init(pacing: .asFastAsPossible, loop: true))
        let clock = VirtualClock()
        let count = Locked(0)
        let context = LocationSourceContext(clock: clock, mode: .continuous) { event in
            if case .location = event { count.withLock { $0 += 1 } }
        }
        let task = Task { try await source.run(context) }
        while count.value < 5 * Self.times.count { await Task.yield() }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
    }

    // MARK: - Duty cycling in track time

    @Test func dutyCyclingDeliversOneFixPerIntervalOfTrackTime() async throws {
        // 1 Hz for 100 s, played 5× faster. Reduced policy: one fix every 10 s of track time.
        let gpx = gpx11(track([(0...100).map { trkpt(47, 8 + Double($0) * 1e-5, t(Double($0))) }]))
        let cycle = DutyCycle(interval: .seconds(10), desiredAccuracy: nil, acquisitionTimeout: .seconds(3))
        let events = try await runReplay(source(.init(pacing: .speedFactor(5)), gpx: gpx), mode: .dutyCycled(cycle))
        #expect(events.locations.map(\.timestamp) == stride(from: 0.0, through: 100, by: 10).map { date(t($0)) })
        #expect(closeAll(events.deliveryTimes, stride(from: 0.0, through: 100, by: 10).map { .s($0 / 5) }))
        #expect(events.statuses.filter { $0 == .resting }.count == 11)
        #expect(events.statuses.last == .ended)
    }

    @Test func dutyCyclingWaitsForAccuracyOrTakesTheBestAtTheTimeout() async throws {
        let accuracy = { (metres: Double) in
            "<extensions><loc:horizontalAccuracy xmlns:loc=\"https://swift-location.dev/xmlns/gpx-location/1\">\(metres)</loc:horizontalAccuracy></extensions>"
        }
        let points = [
            trkpt(47, 8.0, t(0), extra: accuracy(50)), trkpt(47, 8.1, t(1), extra: accuracy(20)),
            trkpt(47, 8.2, t(2), extra: accuracy(5)), trkpt(47, 8.3, t(3), extra: accuracy(4)),  // meets 10 m at 2 s
            trkpt(47, 8.4, t(10), extra: accuracy(40)), trkpt(47, 8.5, t(11), extra: accuracy(30)),
            trkpt(47, 8.6, t(12), extra: accuracy(35)), trkpt(47, 8.7, t(14), extra: accuracy(1)),  // after the timeout
            trkpt(47, 8.8, t(20)),
        ]
        let cycle = DutyCycle(interval: .seconds(10), desiredAccuracy: 10, acquisitionTimeout: .seconds(3))
        let events = try await runReplay(source(gpx: gpx11(track([points]))), mode: .dutyCycled(cycle))
        // Cycle 0: the 5 m fix at 2 s. Cycle 1 (10–13 s): none meets 10 m, the best (30 m) at the 13 s
        // timeout. Cycle 2 (20 s): the last point, unrated, as the file ends.
        #expect(events.locations.map(\.longitude) == [8.2, 8.5, 8.8])
        #expect(closeAll(events.deliveryTimes, [.s(2), .s(13), .s(20)]))
    }

    @Test func dutyCyclingReportsAGapOnceWhenItStartsAndOnceWhenItEnds() async throws {
        // Points at 0, 5 (while resting), 31 and 35 (while resting).
        let gpx = gpx11(track([[trkpt(47, 8, t(0)), trkpt(47, 8, t(5)), trkpt(47, 8, t(31)), trkpt(47, 8, t(35))]]))
        let cycle = DutyCycle(interval: .seconds(10), desiredAccuracy: nil, acquisitionTimeout: .seconds(2))
        let events = try await runReplay(source(gpx: gpx), mode: .dutyCycled(cycle))
        #expect(closeAll(events.deliveryTimes, [.s(0), .s(31)]))
        // The cycles at 10 and 20 s find nothing: one no-fix when the first ends, one count with the next fix.
        #expect(events.errors.map(\.code) == [.noFix, .sourceRecovered])
        #expect(events.errors.last?.message.contains("after 2 acquisitions without a point") == true)
    }

    @Test func aYearLongGapInDutyCyclingCostsTwoEventsNotOnePerInterval() async throws {
        // One year of track time between two points, one-minute cycles: 525,600 empty acquisitions.
        let year = 365.0 * 86_400
        let gpx = gpx11(track([[trkpt(47, 8, t(0)), trkpt(47, 8.1, t(year))]]))
        let cycle = DutyCycle(interval: .seconds(60), desiredAccuracy: nil, acquisitionTimeout: .seconds(30))
        let events = try await runReplay(source(.init(pacing: .asFastAsPossible, maxGap: nil), gpx: gpx), mode: .dutyCycled(cycle))
        #expect(events.locations.map(\.longitude) == [8, 8.1])
        #expect(events.errors.map(\.code) == [.noFix, .sourceRecovered])
        #expect(events.errors.last?.message.contains("after 525599 acquisitions") == true, "\(events.errors)")
    }

    @Test func dutyCyclingAsFastAsPossible() async throws {
        let gpx = gpx11(track([(0...60).map { trkpt(47, 8, t(Double($0))) }]))
        let cycle = DutyCycle(interval: .seconds(15), desiredAccuracy: nil, acquisitionTimeout: .seconds(1))
        let clock = VirtualClock()
        let events = try await runReplay(
            source(.init(pacing: .asFastAsPossible), gpx: gpx), mode: .dutyCycled(cycle), clock: clock)
        #expect(events.locations.map(\.timestamp) == [0, 15, 30, 45, 60].map { date(t($0)) })
        #expect(clock.sleeps == 0)
    }

    // MARK: - Mode changes

    @Test func switchingModesMidReplay() async throws {
        // Continuous until the fix at 1.5 s, then reduced (one fix per 4 s of track time) until the fix at
        // 6.5 s, then continuous again.
        let reduced = AcquisitionMode.dutyCycled(
            DutyCycle(interval: .seconds(4), desiredAccuracy: nil, acquisitionTimeout: .seconds(2)))
        let switched = Locked(0)
        let events = try await runReplay(source()) { event, context in
            guard case .location(let location) = event else { return }
            let seconds = location.timestamp.timeIntervalSince(date(t(0)))
            if seconds == 1.5, switched.value == 0 {
                switched.withLock { $0 = 1 }
                context.setMode(reduced)
            } else if seconds == 6.5, switched.value == 1 {
                switched.withLock { $0 = 2 }
                context.setMode(.continuous)
            }
        }
        // Reduced from 1.5 s: cycles start at 1.5 s (fix at 2.5) and 5.5 s (fix at 6.5; 3.5 was skipped);
        // the next rest is cut short by the switch, so 7.5 s follows at its time.
        let delivered = events.locations.map { $0.timestamp.timeIntervalSince(date(t(0))) }
        #expect(delivered == [0, 1, 1.5, 2.5, 6.5, 7.5, 8.5, 9.5, 10.5])
        #expect(closeAll(events.deliveryTimes, delivered.map { .s($0) }))
        // Back to continuous play, the receiver says it has a fix again: not left resting.
        #expect(events.statuses.last(where: { $0 != .ended }) == .hasFix, "\(events.statuses)")
    }

    @Test func aModeChangeInterruptsALongWait() async throws {
        // A 1-hour pause in the file (inside a segment, so not compressed). While the replay waits for it,
        // the mode changes: a duty cycle starts at once and reports no fix after its timeout.
        let gpx = gpx11(track([[trkpt(47, 8, t(0)), trkpt(47, 8, t(3600))]]))
        let source = try source(gpx: gpx)
        await withMainSerialExecutor {
            let clock = TestClock()
            let start = clock.now
            let events = Locked<[Recorded]>([])
            let context = LocationSourceContext(clock: clock, mode: .continuous) { event in
                events.withLock { $0.append(Recorded(time: start.duration(to: clock.now), event: event)) }
            }
            let task = Task { try await source.run(context) }
            await clock.advance(by: .seconds(100))
            #expect(events.value.compactMap(\.location).count == 1)
            context.setMode(
                .dutyCycled(DutyCycle(interval: .seconds(600), desiredAccuracy: nil, acquisitionTimeout: .seconds(30))))
            await clock.advance(by: .seconds(30))
            let noFix = events.value.first { if case .error(let error) = $0.event { error.code == .noFix } else { false } }
            #expect(noFix?.time == .seconds(130))
            task.cancel()
            await #expect(throws: CancellationError.self) { try await task.value }
        }
    }

    // MARK: - Failures

    @Test func unreadableBrokenAndEmptyFiles() async throws {
        let missing = try GPXReplaySource(path: "/nonexistent/ride.gpx", now: { replayStart })
        let unreadable = await #expect(throws: LocationError.self) { try await runReplay(missing) }
        #expect(unreadable?.code == .sourceUnavailable)
        #expect(unreadable?.message == "/nonexistent/ride.gpx: cannot open the input: No such file or directory")

        // Broken after two points: those two are delivered first, then the error names the line.
        let broken = gpx11(track([[trkpt(47, 8, t(0)), trkpt(47, 8, t(1)), trkpt(91, 8, t(2))]]))
        let recorded = Locked<[LocationSourceEvent]>([])
        let context = LocationSourceContext(clock: VirtualClock(), mode: .continuous) { event in
            recorded.withLock { $0.append(event) }
        }
        let brokenPath = try writeGPX(broken)
        let brokenSource = try GPXReplaySource(path: brokenPath, now: { replayStart })
        let invalid = await #expect(throws: LocationError.self) { try await brokenSource.run(context) }
        #expect(invalid?.code == .invalidData)
        #expect(invalid?.message == #"\#(brokenPath):3:179: latitude "91.0" is outside [-90, 90]"#)
        #expect(recorded.value.filter { if case .location = $0 { true } else { false } }.count == 2)

        // A file with no route: nothing to play.
        let tracksOnly = try writeGPX(Self.gpx)
        let routes = try GPXReplaySource(path: tracksOnly, options: .init(selection: .routes), now: { replayStart })
        let noRoutes = await #expect(throws: LocationError.self) { try await runReplay(routes) }
        #expect(noRoutes?.code == .invalidData)
        #expect(noRoutes?.message == "\(tracksOnly): no <rtept> to replay")

        // An empty file, and one of white space only.
        for (text, reason) in [("", "the file is empty"), (" \n\t\n", "the file holds only whitespace")] {
            let path = try writeGPX(text)
            let source = try GPXReplaySource(path: path, now: { replayStart })
            let empty = await #expect(throws: LocationError.self) { try await runReplay(source) }
            #expect(empty?.code == .invalidData)
            #expect(empty?.message == "\(path): \(reason)")
        }
    }

    @Test func nameAndSimulatedFixes() async throws {
        let source = try source()
        #expect(source.name == "replay replay.gpx")
        let events = try await runReplay(source)
        #expect(events.locations.count == Self.times.count)
        #expect(events.locations.allSatisfy { $0.isSimulated && $0.source == "replay.gpx" })
    }

    @Test(.enabled(if: TestData.isAvailable, "real GPX files not found: SKIPPED"))
    func realMultiTrackFileAsFastAsPossible() async throws {
        let source = try GPXReplaySource(
            path: TestData.path("gpsbabel__mtk_logger_m241_multiple_tracks.gpx"),
            options: .init(pacing: .asFastAsPossible, timestamps: .rebasedToNow), now: { replayStart })
        let events = try await runReplay(source)
        let locations = events.locations
        #expect(locations.count == 14263)
        #expect(zip(locations, locations.dropFirst()).allSatisfy { $0.timestamp <= $1.timestamp })
        #expect(locations.allSatisfy { $0.speed != nil })
        #expect(locations.first?.timestamp == replayStart)
    }
}
