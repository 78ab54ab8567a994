import Foundation
import LocationService
import LocationCore

/// Drives an application through a ``LifecycleScript`` in track time: the time of the replayed fixes.
///
/// Give it every source event before the manager sees it (through ``ObservedLocationSource``). For each
/// fix it moves ``clock`` to the fix's track time (never backwards), lets the application's timers (grace
/// period, task expiry) run, and applies the script entries that are due, so the fix itself is handled in
/// the new state. Build the ``Application`` on ``clock`` so its timers count track time too.
package final class TrackTimeLifecycle: Sendable {
    /// The track-time clock; the application's timers should run on it.
    package let clock = ManualClock()
    /// The plan.
    package let script: LifecycleScript

    private struct State {
        var application: Application?
        var firstTimestamp: Date?
        var nextEntry = 0
        var failures: [LocationError] = []
    }

    private let state = Locked(State())
    private let driven = AsyncStream.makeStream(of: Application.self, bufferingPolicy: .bufferingNewest(1))

    /// Creates a driver for a script.
    package init(script: LifecycleScript) {
        self.script = script
    }

    /// The application to drive (it should run on ``clock``).
    package func drive(_ application: Application) {
        state.withLock { $0.application = application }
        driven.continuation.yield(application)
        driven.continuation.finish()
    }

    /// Returns once ``drive(_:)`` has named the application and the messages of its launch (a launch
    /// straight into the background among them) have reached the manager, or when the task is cancelled.
    ///
    /// A replay as fast as possible must not hand the manager a fix before then: the manager would take
    /// it in the foreground, under the high policy, whatever state the app was launched into.
    func applicationLaunched() async {
        var application = state.withLock { $0.application }
        if application == nil {
            for await named in driven.stream {
                application = named
                break
            }
        }
        await application?.waitForPendingEvents()
    }

    /// Track time so far: from the first fix to the latest one seen.
    package var trackTime: Duration { clock.now.offset }

    /// Transitions the script asked for that the lifecycle refused.
    package var failures: [LocationError] { state.withLock { $0.failures } }

    /// Handles one source event; call before the manager sees it.
    /// The source with the lifecycle driven from its fixes: each fix first moves track time (and the
    /// scripted changes due by then), then goes on to the manager, which so sees it in its right state.
    package func drivingLifecycle(of source: any LocationSource) -> any LocationSource {
        TrackTimeSource(base: source, driver: self)
    }

    func observe(_ event: LocationSourceEvent) {
        guard case .location(let location) = event else { return }
        let (application, due) = state.withLock { state -> (Application?, [LifecycleScript.Entry]) in
            let first = state.firstTimestamp ?? location.timestamp
            state.firstTimestamp = first
            let seconds = max(0, location.timestamp.timeIntervalSince(first))
            // GPX times span at most about 3.2e11 s (years 0001 to 9999): far inside what the conversion keeps.
            let now = ValueRange.duration(clampingSeconds: seconds)
            clock.advance(to: ManualClock.Instant(offset: now))
            let current = clock.now.offset
            var due: [LifecycleScript.Entry] = []
            while state.nextEntry < script.entries.count, script.entries[state.nextEntry].time <= current {
                due.append(script.entries[state.nextEntry])
                state.nextEntry += 1
            }
            return (state.application, due)
        }
        guard let application else { return }
        application.processDueTimers()
        for entry in due {
            do {
                try application.transition(to: entry.state)
            } catch {
                state.withLock { $0.failures.append(error) }
            }
        }
    }
}

/// A source whose fixes drive a ``TrackTimeLifecycle`` before the manager sees them.
private struct TrackTimeSource: LocationSource {
    let base: any LocationSource
    let driver: TrackTimeLifecycle

    var name: String { base.name }

    func run(_ context: LocationSourceContext) async throws {
        let driver = self.driver
        // Weakly: `context` holds `inner` through the mode forwarder, and a strong reference back made a
        // cycle that kept both contexts alive after every run (found by LeakSanitizer). Whoever runs the
        // source keeps `context` alive while it runs; events after that are stale anyway.
        let inner = LocationSourceContext(clock: context.clock, mode: context.mode) { [weak context] event in
            driver.observe(event)
            context?.report(event)
        }
        context.forwardModeChanges { inner.setMode($0) }
        inner.setMode(context.mode)
        await driver.applicationLaunched()
        try Task.checkCancellation()
        try await base.run(inner)
    }
}
