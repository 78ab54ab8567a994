import Foundation
import LocationCore
import Testing

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
    @Test func theCombinedModeIsContinuousIfAnyTapIsElseTheShortestIntervalAndStrictestAccuracy() {
        #expect(SharedReceiver.combined([AcquisitionMode]()) == nil)
        #expect(SharedReceiver.combined([cycle(60), .continuous, cycle(30)]) == .continuous)
        #expect(
            SharedReceiver.combined([cycle(60, accuracy: 100, timeout: 10), cycle(30, accuracy: nil, timeout: 20), cycle(120, accuracy: 50)])
                == cycle(30, accuracy: 50, timeout: 20))
        #expect(SharedReceiver.combined([cycle(60), cycle(90)]) == cycle(60, accuracy: nil))
    }

    @Test func theSourceRunsOnlyWhileATapRunsInTheModeTheyNeedTogether() async {
        let clock = ManualClock()
        let source = DrivenSource()
        let receiver = SharedReceiver(source: source, clock: clock)
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
        #expect(await settle { source.mode == cycle(30, accuracy: 20) }, "back to duty-cycled when it leaves the foreground")
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
        let clock = ManualClock()
        let source = DrivenSource()
        let receiver = SharedReceiver(source: source, clock: clock)
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

    @Test func aBackgroundTapTakesTheFirstFixMeetingItsAccuracyElseTheBestWhenItsTimeIsUp() async {
        let clock = ManualClock()
        let source = DrivenSource()
        let receiver = SharedReceiver(source: source, clock: clock)
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
        let clock = ManualClock()
        let source = DrivenSource()
        let receiver = SharedReceiver(source: source, clock: clock)
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
        let clock = ManualClock()
        let source = DrivenSource()
        let receiver = SharedReceiver(source: source, clock: clock)
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
        let clock = ManualClock()
        let source = DrivenSource()
        let receiver = SharedReceiver(source: source, clock: clock)
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
