/// A clock that moves only when told to, for time that comes from data (a replay's track time) or tests.
///
/// ``advance(to:)`` resumes every sleeper whose deadline has come, in deadline order. Time never goes back.
package final class ManualClock: Clock, Sendable {
    /// A point on a manual clock: the duration since its origin.
    package struct Instant: InstantProtocol, Sendable {
        /// Time since the clock's origin.
        package var offset: Duration

        /// Creates an instant at `offset` from the origin.
        package init(offset: Duration) { self.offset = offset }

        package func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        package func duration(to other: Instant) -> Duration { other.offset - offset }
        package static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct Sleeper {
        var deadline: Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var sleepers: [Int: Sleeper] = [:]
        var nextID = 0
    }

    private let state = Locked(State())

    /// Creates a clock at its origin.
    package init() {}

    /// The current instant.
    package var now: Instant { state.withLock { $0.now } }

    /// The smallest step the clock can take.
    package var minimumResolution: Duration { .nanoseconds(1) }

    /// Suspends until the clock reaches `deadline`; throws `CancellationError` if the task is cancelled.
    package func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow = state.withLock { state -> Bool in
                    if deadline <= state.now || Task.isCancelled { return true }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { $0.sleepers.removeValue(forKey: id) }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
        try Task.checkCancellation()
    }

    /// Moves the clock forward to `instant` (never back) and wakes the sleepers that are due.
    package func advance(to instant: Instant) {
        let due = state.withLock { state -> [Sleeper] in
            guard instant > state.now else { return [] }
            state.now = instant
            let due = state.sleepers.filter { $0.value.deadline <= instant }
            for id in due.keys { state.sleepers[id] = nil }
            return due.values.sorted { $0.deadline < $1.deadline }
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Moves the clock forward by `duration`.
    package func advance(by duration: Duration) {
        advance(to: now.advanced(by: duration))
    }
}
