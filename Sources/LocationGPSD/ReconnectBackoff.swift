/// Capped exponential delays between reconnection attempts: `initial`, doubling, never above `maximum`.
struct ReconnectBackoff: Sendable, Equatable {
    let initial: Duration
    let maximum: Duration
    private var next: Duration

    init(initial: Duration, maximum: Duration) {
        self.initial = initial
        self.maximum = max(initial, maximum)
        self.next = initial
    }

    /// The delay before the next attempt; each call doubles the following one up to the cap.
    mutating func nextDelay() -> Duration {
        let delay = next
        next = min(next * 2, maximum)
        return delay
    }

    /// Starts again from `initial` (after data flowed again).
    mutating func reset() {
        next = initial
    }
}
