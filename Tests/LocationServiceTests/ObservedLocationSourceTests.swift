import Foundation
import LocationCore
import LocationService
import Testing

/// The wrapper that shows source events to an observer.
@Suite struct ObservedLocationSourceTests {
    /// A source that reports one fix and ends.
    struct OneFix: LocationSource {
        var name: String { "one fix" }
        func run(_ context: LocationSourceContext) async throws {
            context.deliver(Location(latitude: 1, longitude: 2, timestamp: .init(timeIntervalSince1970: 0)))
        }
    }

    @Test func eventsReachTheObserverThenTheRunnerAndNothingOutlivesTheRun() async throws {
        let observed = Locked<[LocationSourceEvent]>([])
        let reported = Locked<[LocationSourceEvent]>([])
        weak var weakContext: LocationSourceContext?
        do {
            let context = LocationSourceContext(clock: ContinuousClock(), mode: .continuous) { event in
                reported.withLock { $0.append(event) }
            }
            weakContext = context
            try await ObservedLocationSource(OneFix()) { event in observed.withLock { $0.append(event) } }.run(context)
        }
        #expect(observed.value.count == 1)
        #expect(reported.value.count == 1)
        // The runner's context is released with the runner's last reference: the wrapper's own context
        // holds it only weakly (a strong reference made a cycle that leaked both on every run).
        #expect(weakContext == nil)
    }
}
