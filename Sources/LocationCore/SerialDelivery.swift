/// Runs callbacks one at a time in the order they were enqueued, without holding any lock while they run.
///
/// Callers enqueue work (typically while holding their own state lock, which fixes the order) and call
/// ``drain()`` after releasing it. Whoever finds the queue idle runs everything queued, including work
/// enqueued meanwhile by others, whose own `drain()` returns at once. So callbacks never overlap, keep
/// their order, and may safely call back into the object that enqueued them.
///
/// Events have an item of their own, handed to one handler set once, so the per-fix path allocates no
/// closure and forms no weak reference.
package final class SerialDelivery: Sendable {
    private enum Item: Sendable {
        case call(@Sendable () -> Void)
        case event(LocationEvent)
    }

    private struct State {
        var pending: [Item] = []
        var head = 0
        var isDraining = false
    }

    private let state = Locked(State())
    private let eventHandler = Locked<(@Sendable (LocationEvent) -> Void)?>(nil)

    package init() {}

    /// Sets what runs for every ``enqueue(event:)`` item.
    package func setEventHandler(_ handler: @escaping @Sendable (LocationEvent) -> Void) {
        eventHandler.withLock { $0 = handler }
    }

    /// Appends work to the queue; it runs at the next ``drain()``.
    package func enqueue(_ work: @escaping @Sendable () -> Void) {
        state.withLock { $0.pending.append(.call(work)) }
    }

    /// Appends an event for the event handler; it is handed over at the next ``drain()``.
    package func enqueue(event: LocationEvent) {
        state.withLock { $0.pending.append(.event(event)) }
    }

    /// Runs queued work until the queue is empty, unless another caller is already doing so.
    package func drain() {
        guard var item = claim() else { return }
        let handler = eventHandler.value
        while true {
            switch item {
            case .call(let work): work()
            case .event(let event): handler?(event)
            }
            guard let following = next() else { return }
            item = following
        }
    }

    /// Returns once everything enqueued before the call has run, whichever thread runs it.
    package func waitUntilDelivered() async {
        await withCheckedContinuation { continuation in
            enqueue { continuation.resume() }
            drain()
        }
    }

    /// Becomes the drainer and takes the first item, unless someone else drains or nothing waits.
    private func claim() -> Item? {
        state.withLock { state in
            guard !state.isDraining, state.head < state.pending.count else { return nil }
            state.isDraining = true
            defer { state.head += 1 }
            return state.pending[state.head]
        }
    }

    private func next() -> Item? {
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
