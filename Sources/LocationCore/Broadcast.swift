import Synchronization

/// Fans values out to any number of `AsyncStream` subscribers, each with its own buffer.
///
/// With a `bufferLimit`, a subscriber that falls further behind loses its oldest buffered values, each
/// handed to `onDrop` so that the loss is counted, never silent.
package final class Broadcast<Element: Sendable>: Sendable {
    private struct State {
        var subscribers: [Int: AsyncStream<Element>.Continuation] = [:]
        var nextID = 0
        var isFinished = false
    }

    private let state = Locked(State())
    /// The number of subscribers, readable without the lock: most values are yielded to nobody.
    private let subscriberTotal = Atomic<Int>(0)
    private let bufferLimit: Int?
    private let onDrop: @Sendable (Element) -> Void

    /// Creates a broadcast whose subscribers buffer at most `bufferLimit` values (`nil`: no limit).
    package init(bufferLimit: Int? = nil, onDrop: @escaping @Sendable (Element) -> Void = { _ in }) {
        self.bufferLimit = bufferLimit.map { max(1, $0) }
        self.onDrop = onDrop
    }

    /// A new stream that receives every value yielded from now on.
    package func subscribe() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: Element.self, bufferingPolicy: bufferLimit.map { .bufferingNewest($0) } ?? .unbounded)
        let id: Int? = state.withLock { state in
            guard !state.isFinished else { return nil }
            state.nextID += 1
            state.subscribers[state.nextID] = continuation
            subscriberTotal.store(state.subscribers.count, ordering: .releasing)
            return state.nextID
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            self.state.withLock { state in
                state.subscribers.removeValue(forKey: id)
                self.subscriberTotal.store(state.subscribers.count, ordering: .releasing)
            }
        }
        return stream
    }

    /// Sends a value to every current subscriber.
    package func yield(_ element: Element) {
        // No lock, nothing to copy and no allocation on the common path of a delegate without iterators.
        guard subscriberTotal.load(ordering: .acquiring) > 0 else { return }
        let current = state.withLock { Array($0.subscribers.values) }
        for subscriber in current {
            if case .dropped(let oldest) = subscriber.yield(element) { onDrop(oldest) }
        }
    }

    /// Ends every current subscription; with `permanently`, later subscribers also end at once.
    package func finish(permanently: Bool = true) {
        let subscribers = state.withLock { state in
            if permanently { state.isFinished = true }
            defer {
                state.subscribers.removeAll()
                subscriberTotal.store(0, ordering: .releasing)
            }
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.finish() }
    }

    /// How many subscribers are attached.
    package var subscriberCount: Int { subscriberTotal.load(ordering: .acquiring) }
}

/// An `AsyncSequence` that subscribes to a broadcast when iteration begins.
public struct BroadcastSequence<Element: Sendable>: AsyncSequence, Sendable {
    private let broadcast: Broadcast<Element>

    package init(_ broadcast: Broadcast<Element>) {
        self.broadcast = broadcast
    }

    /// Subscribes: the iterator receives every value sent from this moment on.
    public func makeAsyncIterator() -> AsyncStream<Element>.Iterator {
        broadcast.subscribe().makeAsyncIterator()
    }
}
