/// Capped exponential delays between reconnection attempts: `initial`, doubling, never above `maximum`.
///
/// Every source and client of this package that connects again (gpsd, locationd) waits by it, 0.25 s to 5 s
/// by default; a ``LocationSource`` of your own can too:
///
/// ```swift
/// var backoff = ReconnectBackoff()
/// while !connected {
///     try await Task.sleep(for: backoff.nextDelay())
///     connected = tryToConnect()
/// }
/// backoff.reset()
/// ```
public struct ReconnectBackoff: Sendable, Equatable {
    /// The first delay, and the one after a ``reset()``.
    public let initial: Duration
    /// The longest delay.
    public let maximum: Duration
    private var next: Duration

    /// Delays from `initial`, doubling up to `maximum` (a negative delay counts as zero; a `maximum` below
    /// `initial` as `initial`).
    public init(initial: Duration = .milliseconds(250), maximum: Duration = .seconds(5)) {
        self.initial = max(.zero, initial)
        self.maximum = max(self.initial, maximum)
        self.next = self.initial
    }

    /// The delay before the next attempt; each call doubles the following one up to the cap.
    public mutating func nextDelay() -> Duration {
        let delay = next
        // Doubled only below half the cap, so that no doubling can overflow.
        next = next > maximum / 2 ? maximum : min(next * 2, maximum)
        return delay
    }

    /// Starts again from `initial` (after data flowed again).
    public mutating func reset() {
        next = initial
    }
}
