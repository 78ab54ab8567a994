import LocationCore

/// Wraps a source and shows every event to an observer before the manager gets it.
///
/// Mode changes pass through synchronously, so a source that checks its mode before each fix (a replay
/// running as fast as possible) switches at exactly the fix where the observer changed the lifecycle.
public struct ObservedLocationSource: LocationSource {
    /// The wrapped source.
    public let base: any LocationSource
    private let observer: @Sendable (LocationSourceEvent) -> Void

    /// Wraps `base`; `observer` runs on the source's task for each event, before it is forwarded.
    public init(_ base: any LocationSource, observer: @escaping @Sendable (LocationSourceEvent) -> Void) {
        self.base = base
        self.observer = observer
    }

    /// The wrapped source's name.
    public var name: String { base.name }

    /// Runs the wrapped source with a context that observes, then forwards, each event.
    public func run(_ context: LocationSourceContext) async throws {
        let observer = self.observer
        // Weakly: `context` holds `inner` through the mode forwarder, and a strong reference back made a
        // cycle that kept both contexts alive after every run (found by LeakSanitizer). Whoever runs the
        // source keeps `context` alive while it runs; events after that are stale anyway.
        let inner = LocationSourceContext(clock: context.clock, mode: context.mode) { [weak context] event in
            observer(event)
            context?.report(event)
        }
        context.forwardModeChanges { inner.setMode($0) }
        inner.setMode(context.mode)
        try await base.run(inner)
    }
}
