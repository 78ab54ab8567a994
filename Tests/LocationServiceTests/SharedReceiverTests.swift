import Foundation
import LocationCore
import Testing
import locationd

@testable import LocationService

/// A source the test drives: it records how it was run and reports what the test emits.
private final class DrivenSource: LocationSource {
    let name = "driven"
    private let context = Locked<LocationSourceContext?>(nil)
    private let runs = Locked(0)
    private let ending = Locked<CheckedContinuation<Void, any Error>?>(nil)

    var runCount: Int { runs.value }
    var isRunning: Bool { context.value != nil }
    var mode: AcquisitionMode? { context.value?.mode }

    func run(_ context: LocationSourceContext) async throws {
        runs.withLock { $0 += 1 }
        self.context.withLock { $0 = context }
        defer { self.context.withLock { $0 = nil } }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                ending.withLock { $0 = continuation }
                if Task.isCancelled { end(.failure(CancellationError())) }
            }
        } onCancel: {
            self.end(.failure(CancellationError()))
        }
    }

    func emit(_ event: LocationSourceEvent) { context.value?.report(event) }

    func end(_ result: Result<Void, any Error>) {
        ending.withLock { $0.take() }?.resume(with: result)
    }
}

/// One app's side: a tap run in a context of its own, recording what reaches it.
private final class TapRun: Sendable {
    let context: LocationSourceContext
    let events = Locked<[LocationSourceEvent]>([])
    let outcome = Locked<String?>(nil)
    private let task: Locked<Task<Void, Never>?> = Locked(nil)

    init(_ receiver: SharedReceiver, clock: ManualClock, mode: AcquisitionMode) {
        let events = self.events
        context = LocationSourceContext(clock: clock, mode: mode) { event in events.withLock { $0.append(event) } }
        let tap = receiver.tap()
        let context = self.context
        let outcome = self.outcome
        task.withLock {
            $0 = Task {
                do {
                    try await tap.run(context)
                    outcome.withLock { $0 = "ended" }
                } catch is CancellationError {
                    outcome.withLock { $0 = "cancelled" }
                } catch {
                    outcome.withLock { $0 = "failed: \(error)" }
                }
            }
        }
    }

    var latitudes: [Double] {
        events.value.compactMap { if case .location(let location) = $0 { location.latitude } else { nil } }
    }

    func cancel() async {
        let running = task.value
        running?.cancel()
        await running?.value
    }

    func finished() async { await task.value?.value }
}

/// Lets the tasks that were just started run until `condition` holds (no wall-clock wait).
private func settle(_ condition: () -> Bool) async -> Bool {
    for _ in 0..<10_000 {
        if condition() { return true }
        await Task.yield()
    }
    return condition()
}

private func fix(_ index: Int, accuracy: Double? = 5) -> Location {
    Location(
        latitude: 50 + Double(index) * 1e-4, longitude: 8, horizontalAccuracy: accuracy,
        timestamp: Date(timeIntervalSince1970: 1_800_000_000 + Double(index)))
}

private func cycle(_ seconds: Int, accuracy: Double? = nil, timeout: Int = 10) -> AcquisitionMode {
    .dutyCycled(DutyCycle(interval: .seconds(seconds), desiredAccuracy: accuracy, acquisitionTimeout: .seconds(timeout)))
}

@Suite("One receiver shared by many apps")
struct SharedReceiverTests {
    /// A manual clock, a source the test drives, and a receiver sharing it.
    fileprivate static func rig() -> (ManualClock, DrivenSource, SharedReceiver) {
        let clock = ManualClock()
        let source = DrivenSource()
        return (clock, source, SharedReceiver(source: source, clock: clock))
    }

    @Test func theCombinedModeIsContinuousIfAnyTapIsElseACommonDivisorOfTheIntervalsAndTheStrictestAccuracy() {
        #expect(SharedReceiver.combined([AcquisitionMode]()) == nil)
        #expect(SharedReceiver.combined([cycle(60), .continuous, cycle(30)]) == .continuous)
        #expect(
            SharedReceiver.combined([cycle(60, accuracy: 100, timeout: 10), cycle(30, accuracy: nil, timeout: 20), cycle(120, accuracy: 50)])
                == cycle(30, accuracy: 50, timeout: 20))
        #expect(SharedReceiver.combined([cycle(60), cycle(90)]) == cycle(30, accuracy: nil), "both fall on every 30 s")
        #expect(SharedReceiver.combined([cycle(7), cycle(5)]) == cycle(1), "7 s and 5 s: every second")
        let halfSeconds = DutyCycle(interval: .milliseconds(7500), desiredAccuracy: nil, acquisitionTimeout: .seconds(10))
        #expect(SharedReceiver.combined([.dutyCycled(halfSeconds), cycle(5)]) == .dutyCycled(DutyCycle(interval: .milliseconds(2500), desiredAccuracy: nil, acquisitionTimeout: .seconds(10))))
        let odd = DutyCycle(interval: .milliseconds(1001), desiredAccuracy: nil, acquisitionTimeout: .seconds(10))
        #expect(SharedReceiver.combined([.dutyCycled(odd), cycle(1)]) == .continuous, "no common divisor of an epoch or more")
        let quick = DutyCycle(interval: .milliseconds(100), desiredAccuracy: nil, acquisitionTimeout: .seconds(10))
        #expect(SharedReceiver.combined([.dutyCycled(quick)]) == .dutyCycled(quick), "one tap's own short interval stays")
    }

    @Test func theSourceRunsOnlyWhileATapRunsInTheModeTheyNeedTogether() async {
        let (clock, source, receiver) = Self.rig()
        #expect(receiver.mode == nil && !source.isRunning, "nobody wants updates: the source does not run")

        let background = TapRun(receiver, clock: clock, mode: cycle(60))
        #expect(await settle { source.isRunning })
        #expect(source.mode == cycle(60))
        let other = TapRun(receiver, clock: clock, mode: cycle(30, accuracy: 20))
        #expect(await settle { receiver.tapCount == 2 })
        #expect(source.mode == cycle(30, accuracy: 20), "the shortest interval and the best accuracy")
        let foreground = TapRun(receiver, clock: clock, mode: .continuous)
        #expect(await settle { source.mode == .continuous }, "one app in the foreground runs the receiver continuously")

        foreground.context.setMode(cycle(45))
        #expect(
            await settle { source.mode == cycle(15, accuracy: 20) },
            "back to duty-cycled when it leaves the foreground, every 15 s for 45, 30 and 60 s")
        await foreground.cancel()
        await other.cancel()
        #expect(source.mode == cycle(60))
        await background.cancel()
        #expect(await settle { !source.isRunning }, "the last app stopped: the receiver is off")
        #expect(receiver.mode == nil)
        #expect(source.runCount == 1, "one run served every app; mode changes did not restart it")
        #expect(foreground.outcome.value == "cancelled")
    }

    @Test func aBackgroundTapGetsOneFixPerIntervalWhileAnotherKeepsTheReceiverContinuous() async {
        let (clock, source, receiver) = Self.rig()
        let foreground = TapRun(receiver, clock: clock, mode: .continuous)
        let background = TapRun(receiver, clock: clock, mode: cycle(60))
        #expect(await settle { receiver.tapCount == 2 && source.isRunning })
        for second in 0..<180 {
            source.emit(.location(fix(second)))
            clock.advance(by: .seconds(1))
        }
        #expect(foreground.latitudes.count == 180, "the foreground app gets every epoch")
        #expect(background.latitudes == [fix(0), fix(60), fix(120)].map(\.latitude), "the background app one a minute")
        #expect(source.runCount == 1, "no acquisition of its own")
        await foreground.cancel()
        await background.cancel()
    }

    @Test func twoBackgroundTapsOf7And5SecondsGetFixesExactlyThatFarApart() async {
        let (clock, source, receiver) = Self.rig()
        let seven = TapRun(receiver, clock: clock, mode: cycle(7))
        let five = TapRun(receiver, clock: clock, mode: cycle(5))
        #expect(await settle { receiver.tapCount == 2 && source.mode == cycle(1) })
        // The receiver, duty-cycled as the taps need together, delivers one fix per cycle of its mode.
        guard case .dutyCycled(let receiverCycle)? = source.mode else {
            Issue.record("the receiver is not duty-cycled: \(String(describing: source.mode))")
            return
        }
        let step = Int(receiverCycle.interval.components.seconds)
        for second in stride(from: 0, to: 71, by: max(1, step)) {
            source.emit(.location(fix(second)))
            clock.advance(by: .seconds(step))
        }
        func gaps(_ tap: TapRun) -> [Double] {
            let times = tap.events.value.compactMap { if case .location(let location) = $0 { location.timestamp.timeIntervalSince1970 } else { nil } }
            return zip(times, times.dropFirst()).map { $1 - $0 }
        }
        #expect(gaps(seven).count == 10 && gaps(seven).allSatisfy { $0 == 7 }, "every 7 s: \(gaps(seven))")
        #expect(gaps(five).count == 14 && gaps(five).allSatisfy { $0 == 5 }, "every 5 s: \(gaps(five))")
        await seven.cancel()
        await five.cancel()
    }

    @Test func aBackgroundIntervalOfAFractionOfASecondIsKeptOnAverageBesideAContinuousReceiver() async {
        let (clock, source, receiver) = Self.rig()
        let foreground = TapRun(receiver, clock: clock, mode: .continuous)
        let interval = DutyCycle(interval: .milliseconds(3300), desiredAccuracy: nil, acquisitionTimeout: .seconds(10))
        let background = TapRun(receiver, clock: clock, mode: .dutyCycled(interval))
        #expect(await settle { receiver.tapCount == 2 && source.mode == .continuous })
        for second in 0...330 {
            source.emit(.location(fix(second)))
            clock.advance(by: .seconds(1))
        }
        let times = background.events.value.compactMap { if case .location(let location) = $0 { location.timestamp.timeIntervalSince1970 } else { nil } }
        let gaps = zip(times, times.dropFirst()).map { $1 - $0 }
        // 330 s at 3.3 s: 100 gaps, each 3 or 4 s (the epochs nearest the due times), none drifting early.
        #expect(gaps.count == 100, "\(gaps.count) gaps: \(gaps.prefix(12))")
        #expect(gaps.allSatisfy { $0 == 3 || $0 == 4 }, "\(gaps.prefix(12))")
        await foreground.cancel()
        await background.cancel()
    }

    @Test func aBackgroundTapTakesTheFirstFixMeetingItsAccuracyElseTheBestWhenItsTimeIsUp() async {
        let (clock, source, receiver) = Self.rig()
        let foreground = TapRun(receiver, clock: clock, mode: .continuous)
        let background = TapRun(receiver, clock: clock, mode: cycle(60, accuracy: 10, timeout: 5))
        #expect(await settle { receiver.tapCount == 2 && source.isRunning })
        let accuracies: [Double] = [40, 12, 8, 3, 30, 30, 30, 30, 30, 30]
        for (second, accuracy) in accuracies.enumerated() {
            source.emit(.location(fix(second, accuracy: accuracy)))
            clock.advance(by: .seconds(1))
        }
        #expect(background.latitudes == [fix(2).latitude], "the first at 10 m or better, not the best later one")
        clock.advance(by: .seconds(50))
        for second in 62..<70 {
            source.emit(.location(fix(second, accuracy: second == 64 ? 15 : 25)))
            clock.advance(by: .seconds(1))
        }
        #expect(background.latitudes == [fix(2), fix(64)].map(\.latitude), "none met 10 m in 5 s: the best one seen")
        await foreground.cancel()
        await background.cancel()
    }

    @Test func statusAndErrorsReachEveryTapInTheSourcesOrder() async {
        let (clock, source, receiver) = Self.rig()
        let first = TapRun(receiver, clock: clock, mode: .continuous)
        let second = TapRun(receiver, clock: clock, mode: cycle(60))
        #expect(await settle { receiver.tapCount == 2 && source.isRunning })
        let error = LocationError(.sourceUnavailable, "gpsd went away")
        source.emit(.status(.noFix))
        source.emit(.satellitesInView(4))
        source.emit(.error(error))
        let expected: [LocationSourceEvent] = [.status(.noFix), .satellitesInView(4), .error(error)]
        #expect(first.events.value == expected)
        #expect(second.events.value == expected)
        await first.cancel()
        await second.cancel()
    }

    @Test func aSourceThatEndsEndsEveryTapAndIsNeverStartedAgain() async {
        let (clock, source, receiver) = Self.rig()
        let first = TapRun(receiver, clock: clock, mode: .continuous)
        let second = TapRun(receiver, clock: clock, mode: cycle(60))
        #expect(await settle { receiver.tapCount == 2 && source.isRunning })
        source.end(.success(()))
        await first.finished()
        await second.finished()
        #expect(first.outcome.value == "ended" && second.outcome.value == "ended")
        let late = TapRun(receiver, clock: clock, mode: .continuous)
        await late.finished()
        #expect(late.outcome.value == "ended", "a replay that ended is not played again from its start")
        #expect(source.runCount == 1)
    }

    @Test func aSourceThatFailsFailsTheTapsRunningAndTheNextTapStartsItAgain() async {
        let (clock, source, receiver) = Self.rig()
        let first = TapRun(receiver, clock: clock, mode: .continuous)
        #expect(await settle { source.isRunning })
        source.end(.failure(LocationError(.sourceFailed, "broken")))
        await first.finished()
        #expect(first.outcome.value?.contains("broken") == true)
        let next = TapRun(receiver, clock: clock, mode: .continuous)
        #expect(await settle { source.isRunning })
        #expect(source.runCount == 2)
        await next.cancel()
    }
}
