/// A clock seen as durations since a fixed origin, so code can keep absolute deadlines without drift.
///
/// It wraps any `Clock<Duration>` (a `ContinuousClock` in production, a test clock in tests) and hides
/// the clock's instant type, which `any Clock<Duration>` cannot name.
package struct Timeline: Sendable {
    private let elapsed: @Sendable () -> Duration
    private let sleeper: @Sendable (Duration) async throws -> Void

    /// Creates a timeline whose origin is the clock's current instant.
    package init(clock: any Clock<Duration>) {
        (elapsed, sleeper) = Self.bind(clock)
    }

    private static func bind<C: Clock<Duration>>(
        _ clock: C
    ) -> (@Sendable () -> Duration, @Sendable (Duration) async throws -> Void) {
        let origin = clock.now
        return (
            { origin.duration(to: clock.now) },
            { deadline in try await clock.sleep(until: origin.advanced(by: deadline), tolerance: nil) }
        )
    }

    /// The time since the origin.
    package var now: Duration { elapsed() }

    /// Sleeps until `deadline` (measured from the origin); returns at once if it has passed.
    package func sleep(until deadline: Duration) async throws {
        try await sleeper(deadline)
    }

    /// Sleeps for `duration` from now.
    package func sleep(for duration: Duration) async throws {
        try await sleeper(now + duration)
    }
}

extension Duration {
    /// The duration in seconds as a `Double`: for a duration made from seconds by
    /// ``ValueRange/duration(clampingSeconds:)``, the very number it was made from, so a value written back
    /// (a request's timeout, a policy's interval) reads as the same duration.
    package var seconds: Double {
        let (whole, attoseconds) = components
        let nearest = Double(whole) + Double(attoseconds) * 1e-18
        // The sum rounds twice; one of its neighbours may be the number that made this duration.
        for candidate in [nearest, nearest.nextDown, nearest.nextUp]
        where ValueRange.duration(clampingSeconds: candidate) == self {
            return candidate
        }
        return nearest
    }
}
