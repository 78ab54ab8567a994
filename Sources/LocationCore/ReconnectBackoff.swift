/// Capped exponential delays between reconnection attempts: `initial`, doubling, never above `maximum`.
/// Every source and client that connects again (gpsd, locationd) waits by it: 0.25 s to 5 s by default.
package struct ReconnectBackoff: Sendable, Equatable {
    /// The first delay, and the one after a ``reset()``.
    package let initial: Duration
    /// The longest delay.
    package let maximum: Duration
    private var next: Duration

    /// Delays from `initial`, doubling up to `maximum`.
    package init(initial: Duration = .milliseconds(250), maximum: Duration = .seconds(5)) {
        self.initial = initial
        self.maximum = max(initial, maximum)
        self.next = initial
    }

    /// The delay before the next attempt; each call doubles the following one up to the cap.
    package mutating func nextDelay() -> Duration {
        let delay = next
        next = min(next * 2, maximum)
        return delay
    }

    /// Starts again from `initial` (after data flowed again).
    package mutating func reset() {
        next = initial
    }
}
