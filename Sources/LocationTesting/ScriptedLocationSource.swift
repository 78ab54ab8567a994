import LocationCore

/// A source driven by a test: it plays a receiver whose fixes the test emits one by one.
///
/// Fixes reach the manager only while someone listens, as with a real receiver whose WATCH is off between
/// duty-cycled acquisitions. The counters tell how much work each mode did.
public final class ScriptedLocationSource: ListeningLocationSource {
    /// The name reported to the manager.
    public let name: String

    private struct State {
        var listeners: [Int: AsyncThrowingStream<LocationSourceEvent, any Error>.Continuation] = [:]
        var nextListenerID = 0
        var listenCount = 0
        var heard = 0
        var missed = 0
        var isFinished = false
        var failure: LocationError?
        var listenerWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Locked(State())

    /// Creates a scripted source.
    public init(name: String = "script") {
        self.name = name
    }

    /// How many times the receiver was opened.
    public var listenCount: Int { state.withLock { $0.listenCount } }
    /// How many emitted fixes reached an open listener.
    public var heardCount: Int { state.withLock { $0.heard } }
    /// How many emitted fixes found the receiver closed.
    public var missedCount: Int { state.withLock { $0.missed } }
    /// Whether a listener is open now.
    public var isListening: Bool { state.withLock { !$0.listeners.isEmpty } }

    /// Emits one fix from the receiver; returns whether anyone heard it.
    @discardableResult
    public func emit(_ location: Location) -> Bool {
        send(.location(location))
    }

    /// Emits any event (status, error) from the receiver; returns whether anyone heard it.
    @discardableResult
    public func send(_ event: LocationSourceEvent) -> Bool {
        let listeners = state.withLock { state in
            if case .location = event {
                if state.listeners.isEmpty { state.missed += 1 } else { state.heard += 1 }
            }
            return Array(state.listeners.values)
        }
        for listener in listeners { listener.yield(event) }
        return !listeners.isEmpty
    }

    /// Ends the source: open listeners finish and later ones finish at once.
    public func finish() {
        let listeners = state.withLock { state in
            state.isFinished = true
            return Array(state.listeners.values)
        }
        for listener in listeners { listener.finish() }
    }

    /// Fails the source for good with an error.
    public func fail(_ error: LocationError) {
        let listeners = state.withLock { state in
            state.isFinished = true
            state.failure = error
            return Array(state.listeners.values)
        }
        for listener in listeners { listener.finish(throwing: error) }
    }

    /// Waits until a listener is open.
    public func waitUntilListening() async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Bool in
                if !state.listeners.isEmpty { return true }
                state.listenerWaiters.append(continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Opens the receiver; it closes when the consumer stops iterating.
    public func listen(_ context: LocationSourceContext) -> AsyncThrowingStream<LocationSourceEvent, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: LocationSourceEvent.self)
        let (id, waiters, ended, failure) = state.withLock {
            state -> (Int, [CheckedContinuation<Void, Never>], Bool, LocationError?) in
            if state.isFinished { return (0, [], true, state.failure) }
            state.nextListenerID += 1
            state.listenCount += 1
            state.listeners[state.nextListenerID] = continuation
            defer { state.listenerWaiters.removeAll() }
            return (state.nextListenerID, state.listenerWaiters, false, nil)
        }
        if ended {
            continuation.finish(throwing: failure)
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.listeners.removeValue(forKey: id) }
        }
        for waiter in waiters { waiter.resume() }
        return stream
    }
}
