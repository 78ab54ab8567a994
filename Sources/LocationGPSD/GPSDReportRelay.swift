import Dispatch
import Foundation
import LocationCore

/// Carries the reader thread's reports to the consumer on a thread of its own, so a consumer that blocks
/// (a slow delegate, a stdout nobody reads) never stops the reader from draining gpsd's socket: gpsd drops
/// a client that stops reading.
///
/// At most `capacity` reports wait. When the consumer falls further behind, the oldest waiting fixes are
/// dropped, and before the next report it gets one ``LocationError/Code/consumerOverrun`` error that says
/// how many: memory stays bounded, and nothing is lost silently. Status reports and errors are never
/// dropped while a fix is waiting.
final class GPSDReportRelay: Sendable {
    private struct State {
        var pending: [LocationSourceEvent] = []
        var droppedSinceReport = 0
        var isFinished = false
    }

    private let state = Locked(State())
    private let wake = DispatchSemaphore(value: 0)
    private let capacity: Int
    private let endpoint: String
    private let countDrop: @Sendable () -> Void

    /// Creates a relay that keeps at most `capacity` reports waiting; `countDrop` runs for every fix it
    /// drops.
    init(capacity: Int, endpoint: String, countDrop: @escaping @Sendable () -> Void) {
        self.capacity = max(1, capacity)
        self.endpoint = endpoint
        self.countDrop = countDrop
    }

    /// Starts the delivering thread: `sink` gets every report in order, and `finished` runs once on that
    /// thread after ``finish()`` when every report before it has been handed on.
    func start(
        sink: @escaping @Sendable (LocationSourceEvent) -> Void,
        finished: @escaping @Sendable () -> Void
    ) {
        let thread = Thread { [self] in
            self.deliver(sink)
            finished()
        }
        thread.name = "gpsd \(endpoint) delivery"
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Queues a report; never blocks on the consumer.
    func submit(_ event: LocationSourceEvent) {
        state.withLock { state in
            state.pending.append(event)
            if state.pending.count > capacity { dropOldestFix(&state) }
        }
        wake.signal()
    }

    /// Ends delivery once every report submitted so far has been handed on.
    func finish() {
        state.withLock { $0.isFinished = true }
        wake.signal()
    }

    /// Drops the oldest waiting fix, or the oldest report when only status reports and errors wait.
    private func dropOldestFix(_ state: inout State) {
        let index =
            state.pending.firstIndex { if case .location = $0 { true } else { false } } ?? 0
        if case .location = state.pending[index] {
            state.droppedSinceReport += 1
            countDrop()
        }
        state.pending.remove(at: index)
    }

    private func deliver(_ sink: @Sendable (LocationSourceEvent) -> Void) {
        while true {
            wake.wait()
            while true {
                let (batch, droppedCount, isDone) = state.withLock {
                    state -> ([LocationSourceEvent], Int, Bool) in
                    let batch = state.pending
                    state.pending = []
                    defer { state.droppedSinceReport = 0 }
                    return (batch, state.droppedSinceReport, state.isFinished && batch.isEmpty)
                }
                if isDone { return }
                if batch.isEmpty { break }
                if droppedCount > 0 {
                    sink(.error(LocationError(
                        .consumerOverrun,
                        "the consumer of gpsd \(endpoint) did not keep up: dropped \(droppedCount.counted("fix")) "
                            + "(at most \(capacity) reports wait)")))
                }
                for event in batch { sink(event) }
            }
        }
    }
}
