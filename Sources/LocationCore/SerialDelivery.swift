/// Runs callbacks one at a time in the order they were enqueued, without holding any lock while they run.
///
/// Callers enqueue work (typically while holding their own state lock, which fixes the order) and call
/// ``drain()`` after releasing it. Whoever finds the queue idle runs everything queued, including work
/// enqueued meanwhile by others, whose own `drain()` returns at once. So callbacks never overlap, keep
/// their order, and may safely call back into the object that enqueued them.
package final class SerialDelivery: Sendable {
    private struct State {
        var pending: [@Sendable () -> Void] = []
        var head = 0
        var isDraining = false
    }

    private let state = Locked(State())

    package init() {}

    /// Appends work to the queue; it runs at the next ``drain()``.
    package func enqueue(_ work: @escaping @Sendable () -> Void) {
        state.withLock { $0.pending.append(work) }
    }

    /// Runs queued work until the queue is empty, unless another caller is already doing so.
    package func drain() {
        let claimed = state.withLock { state -> Bool in
            guard !state.isDraining else { return false }
            state.isDraining = true
            return true
        }
        guard claimed else { return }
        while let work = next() { work() }
    }

    /// Returns once everything enqueued before the call has run, whichever thread runs it.
    package func waitUntilDelivered() async {
        await withCheckedContinuation { continuation in
            enqueue { continuation.resume() }
            drain()
        }
    }

    private func next() -> (@Sendable () -> Void)? {
        state.withLock { state in
            guard state.head < state.pending.count else {
                state.pending.removeAll(keepingCapacity: true)
                state.head = 0
                state.isDraining = false
                return nil
            }
            defer { state.head += 1 }
            return state.pending[state.head]
        }
    }
}
