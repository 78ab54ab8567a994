/// The channel between a running ``LocationSource`` and whoever runs it (normally a ``LocationManager``).
///
/// The runner sets the acquisition mode; the source reads it and reports events. Reporting is
/// synchronous: ``report(_:)`` hands the event to the runner before it returns, so a source never needs
/// a buffer of its own.
public final class LocationSourceContext: Sendable {
    /// The injected time base, as offsets from its start; this package's sources schedule on it.
    package let timeline: Timeline
    /// The injected clock; sources schedule everything on it, so that tests can drive them in time.
    public let clock: any Clock<Duration>

    private struct State {
        var mode: AcquisitionMode
        var waiters: [Int: CheckedContinuation<AcquisitionMode, Never>] = [:]
        var nextWaiterID = 0
        var forwarders: [@Sendable (AcquisitionMode) -> Void] = []
        /// Fields already reported out of range (see ``LocationValueCheck``).
        var reportedFields: Set<String> = []
    }

    // Locked rather than a bare Mutex: it shows its critical sections to ThreadSanitizer.
    private let state: Locked<State>
    private let sink: @Sendable (LocationSourceEvent) -> Void
    /// Creates a context with an initial mode and a sink that receives every reported event.
    public init(
        clock: any Clock<Duration>,
        mode: AcquisitionMode,
        sink: @escaping @Sendable (LocationSourceEvent) -> Void
    ) {
        self.clock = clock
        self.timeline = Timeline(clock: clock)
        self.state = Locked(State(mode: mode))
        self.sink = sink
    }

    /// The mode the source should run in now.
    public var mode: AcquisitionMode {
        state.withLock { $0.mode }
    }

    /// Changes the mode and wakes every source task waiting in ``nextMode(after:)``.
    public func setMode(_ mode: AcquisitionMode) {
        let (waiters, forwarders) = state.withLock {
            state -> ([CheckedContinuation<AcquisitionMode, Never>], [@Sendable (AcquisitionMode) -> Void]) in
            guard state.mode != mode else { return ([], []) }
            state.mode = mode
            defer { state.waiters.removeAll() }
            return (Array(state.waiters.values), state.forwarders)
        }
        for forward in forwarders { forward(mode) }
        for waiter in waiters { waiter.resume(returning: mode) }
    }

    /// Calls `forward` synchronously with every later mode change, so a wrapping source can pass modes
    /// to the source it wraps without an asynchronous hop.
    package func forwardModeChanges(_ forward: @escaping @Sendable (AcquisitionMode) -> Void) {
        state.withLock { $0.forwarders.append(forward) }
    }

    /// Waits until the mode differs from `mode` and returns the new one.
    ///
    /// Returns the current mode at once if it already differs; returns `mode` unchanged if the
    /// calling task is cancelled while waiting.
    public func nextMode(after mode: AcquisitionMode) async -> AcquisitionMode {
        let id = state.withLock { state -> Int in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow: AcquisitionMode? = state.withLock { state in
                    if state.mode != mode { return state.mode }
                    if Task.isCancelled { return mode }
                    state.waiters[id] = continuation
                    return nil
                }
                if let resumeNow { continuation.resume(returning: resumeNow) }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume(returning: mode)
        }
    }

    /// Reports an event to the runner.
    public func report(_ event: LocationSourceEvent) {
        sink(event)
    }

    /// Reports one fix, after `LocationValueCheck`: a fix with an impossible coordinate is refused, other
    /// values out of range are left out; either is reported once per field as `invalid-data`.
    public func deliver(_ location: Location) {
        switch LocationValueCheck.check(location) {
        case .valid:
            sink(.location(location))
        case .leftOut(let checked, let problems):
            reportOnce(problems, location, "left out")
            sink(.location(checked))
        case .refused(let problem):
            reportOnce([problem], location, "the fix refused")
        }
    }

    /// One `invalid-data` error per field that was out of range, the first time only.
    private func reportOnce(_ problems: [LocationValueCheck.Problem], _ location: Location, _ outcome: String) {
        let fresh = state.withLock { state in
            problems.filter { state.reportedFields.insert($0.field).inserted }
        }
        for problem in fresh {
            sink(
                .error(
                    LocationError(
                        .invalidData,
                        "\(location.source ?? "the source"): \(problem.description) at \(RFC3339.string(from: location.timestamp, fractionDigits: 3)); "
                            + "\(outcome) (later fixes like this are handled the same way without another report)")))
        }
    }
}
