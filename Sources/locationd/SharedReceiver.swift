import Foundation
import LocationService
import LocationCore

/// One receiver shared by many apps: the daemon's source runs once, at what the apps need together, and
/// each app's ``LocationManager`` reads it through a ``Tap`` of its own.
///
/// The source runs
/// - continuously while any tap asks for continuous updates (an app in the foreground, a pending request);
/// - duty-cycled at the shortest interval, the best accuracy and the longest acquisition the taps ask for
///   when every tap is duty-cycled (apps in the background);
/// - not at all while no tap runs (for gpsd: the WATCH is off and the connection closed).
///
/// Each tap gets what its own mode allows from that one stream: a continuous tap every fix; a duty-cycled tap
/// one fix per interval, the first that meets its accuracy (else the best seen within its acquisition
/// timeout), taken from the fixes that arrive anyway, so an app in the background costs no acquisition of
/// its own while another keeps the receiver running. Intervals are counted in the fixes' own time, as the
/// receiver's duty cycle is: the same as the clock's for a live receiver, and track time for a replay played
/// faster than life. Status, errors and satellite counts go to every tap.
///
/// A source that ends (a replay reached its end) ends every tap, and later taps end at once: it is never
/// started again from its first point. A source that fails fails the taps running then; the next tap starts
/// it again.
package final class SharedReceiver: Sendable {
    /// The receiver's source.
    package let source: any LocationSource
    private let clock: any Clock<Duration>
    private let state = Locked(State())

    /// How a fix that arrives a little early still counts for a duty-cycled tap: fixes come at the
    /// receiver's cadence, not exactly on each tap's interval.
    private static let epoch: Duration = .seconds(1)

    private struct TapState {
        var mode: AcquisitionMode
        var report: @Sendable (LocationSourceEvent) -> Void
        var finish: @Sendable (Result<Void, any Error>) -> Void
        /// A duty-cycled tap: when its last acquisition began, in fix time (it is due one interval later).
        var lastAcquisition: Duration?
        /// A duty-cycled tap: when its current acquisition began, in fix time, and what it has seen.
        var window: (start: Duration, selector: AcquisitionSelector)?
    }

    private struct State {
        var taps: [Int: TapState] = [:]
        var nextID = 0
        /// The running source's mode, context and task; nil while it does not run.
        var mode: AcquisitionMode?
        var context: LocationSourceContext?
        var task: Task<Void, Never>?
        var generation = 0
        /// Whether the source ran out (it is not started again).
        var ended = false
        /// How often the source was started, for status and tests.
        var starts = 0
        /// The running source's last status, told to a tap that joins later.
        var lastStatus: LocationSourceStatus?
        /// Taps attach, but the source does not start until ``release()``.
        var held = false
    }

    /// Shares `source`; its runs are timed on `clock`. A `held` receiver takes taps but starts the source only
    /// once ``release()`` is called: so that consumers that must see every fix (an uplink, of a replay) are
    /// attached before the first one comes.
    package init(source: any LocationSource, clock: any Clock<Duration> = ContinuousClock(), held: Bool = false) {
        self.source = source
        self.clock = clock
        state.withLock { $0.held = held }
    }

    /// Starts the source for the taps attached while it was held.
    package func release() {
        state.withLock { state in
            guard state.held else { return }
            state.held = false
            applyMode(&state)
        }
    }

    /// A new tap: a ``LocationSource`` for one app's manager.
    package func tap() -> Tap { Tap(receiver: self) }

    /// The mode the source runs in now; `nil` while it is stopped.
    package var mode: AcquisitionMode? { state.withLock { $0.mode } }

    /// How many taps are running.
    package var tapCount: Int { state.withLock { $0.taps.count } }

    /// How many times the source was started.
    package var starts: Int { state.withLock { $0.starts } }

    /// Stops the source, whatever the taps want (the daemon is shutting down).
    package func stop() {
        let task = state.withLock { state -> Task<Void, Never>? in
            defer { (state.task, state.context, state.mode) = (nil, nil, nil) }
            state.generation += 1
            return state.task
        }
        task?.cancel()
    }

    /// The mode that serves every tap: continuous if any is; else a cycle whose interval divides every
    /// tap's (their greatest common divisor, in milliseconds), so that each tap's acquisitions fall on the
    /// receiver's and each gets its own interval to within one of them, with the strictest accuracy and the
    /// longest acquisition of the duty-cycled ones; continuous when that divisor is under an epoch (7 s and
    /// 5 s have 1 s; 7.5 s and 5 s have 2.5 s); nil without taps.
    package static func combined(_ modes: some Sequence<AcquisitionMode>) -> AcquisitionMode? {
        let modes = Array(modes)
        var cycle: DutyCycle?
        for mode in modes {
            switch mode {
            case .continuous:
                return .continuous
            case .dutyCycled(let next):
                guard var combined = cycle else {
                    cycle = next
                    continue
                }
                combined.interval = commonDivisor(combined.interval, next.interval)
                combined.acquisitionTimeout = max(combined.acquisitionTimeout, next.acquisitionTimeout)
                if let accuracy = next.desiredAccuracy {
                    combined.desiredAccuracy = min(combined.desiredAccuracy ?? accuracy, accuracy)
                }
                cycle = combined
            }
        }
        guard let cycle else { return nil }
        // Only a divisor shorter than every tap's own interval: one tap may ask for less than an epoch.
        let shortest = modes.compactMap { if case .dutyCycled(let own) = $0 { own.interval } else { nil } }.min()
        if cycle.interval < epoch, let shortest, cycle.interval < shortest { return .continuous }
        return .dutyCycled(cycle)
    }

    /// The greatest common divisor of two intervals, to the millisecond.
    static func commonDivisor(_ first: Duration, _ second: Duration) -> Duration {
        func milliseconds(_ duration: Duration) -> Int64 {
            let (seconds, attoseconds) = duration.components
            let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
            return overflow ? Int64.max / 2 : max(1, whole + attoseconds / 1_000_000_000_000_000)
        }
        var (a, b) = (milliseconds(first), milliseconds(second))
        while b != 0 { (a, b) = (b, a % b) }
        return .milliseconds(a)
    }

    // MARK: - Taps

    fileprivate func attach(
        mode: AcquisitionMode, report: @escaping @Sendable (LocationSourceEvent) -> Void,
        finish: @escaping @Sendable (Result<Void, any Error>) -> Void
    ) -> Int? {
        let (id, status) = state.withLock { state -> (Int?, LocationSourceStatus?) in
            if state.ended { return (nil, nil) }
            state.nextID += 1
            state.taps[state.nextID] = TapState(mode: mode, report: report, finish: finish)
            applyMode(&state)
            return (state.nextID, state.lastStatus)
        }
        if id == nil { finish(.success(())) }
        // A tap that joins a running source learns where it stands (connected, with or without a fix).
        if let status { report(.status(status)) }
        return id
    }

    fileprivate func setMode(_ mode: AcquisitionMode, of id: Int) {
        state.withLock { state in
            guard state.taps[id] != nil, state.taps[id]?.mode != mode else { return }
            state.taps[id]?.mode = mode
            state.taps[id]?.window = nil
            applyMode(&state)
        }
    }

    fileprivate func detach(_ id: Int) {
        let tap = state.withLock { state -> TapState? in
            defer { applyMode(&state) }
            return state.taps.removeValue(forKey: id)
        }
        tap?.finish(.failure(CancellationError()))
    }

    /// Starts, changes or stops the source to serve the taps there are.
    private func applyMode(_ state: inout State) {
        let wanted = Self.combined(state.taps.values.map(\.mode))
        guard let wanted else {
            if let task = state.task {
                task.cancel()
                (state.task, state.context, state.mode, state.lastStatus) = (nil, nil, nil, nil)
                state.generation += 1
            }
            return
        }
        if state.held { return }
        state.mode = wanted
        if let context = state.context {
            context.setMode(wanted)
            return
        }
        state.generation += 1
        state.starts += 1
        let generation = state.generation
        let run = SourceRun(
            source, clock: clock, mode: wanted,
            report: { [weak self] event in self?.fanOut(event, generation: generation) },
            ended: { [weak self] result in self?.sourceEnded(generation: generation, result: result) })
        state.context = run.context
        state.task = run.task
    }

    private func sourceEnded(generation: Int, result: Result<Void, any Error>) {
        let taps = state.withLock { state -> [TapState] in
            guard state.generation == generation else { return [] }
            (state.task, state.context, state.mode, state.lastStatus) = (nil, nil, nil, nil)
            if case .success = result { state.ended = true }
            defer { state.taps.removeAll() }
            return Array(state.taps.values)
        }
        for tap in taps { tap.finish(result) }
    }

    /// Hands one of the source's events to every tap, each as its mode allows. Called on the source's
    /// reporting thread, one event at a time, so every tap sees the events in the source's order.
    private func fanOut(_ event: LocationSourceEvent, generation: Int) {
        let deliveries = state.withLock { state -> [(@Sendable (LocationSourceEvent) -> Void, LocationSourceEvent)] in
            guard state.generation == generation else { return [] }
            if case .status(let status) = event { state.lastStatus = status }
            guard case .location(let location) = event else {
                return state.taps.values.map { ($0.report, event) }
            }
            let receiverMode = state.mode
            var out: [(@Sendable (LocationSourceEvent) -> Void, LocationSourceEvent)] = []
            for id in state.taps.keys.sorted() {
                guard var tap = state.taps[id] else { continue }
                if let chosen = Self.offer(location, to: &tap, receiverMode: receiverMode) {
                    out.append((tap.report, .location(chosen)))
                }
                state.taps[id] = tap
            }
            return out
        }
        for (report, event) in deliveries { report(event) }
    }

    /// What a tap takes of one fix: every fix when continuous; when duty-cycled, once it is due, the first
    /// that meets its accuracy or the best seen when its acquisition time is up.
    private static func offer(
        _ location: Location, to tap: inout TapState, receiverMode: AcquisitionMode?
    ) -> Location? {
        guard case .dutyCycled(let cycle) = tap.mode else { return location }
        let seconds = location.timestamp.timeIntervalSince1970
        // A time that is no number (never from a checked source) cannot be placed: it is simply passed on.
        guard seconds.isFinite, abs(seconds) < 1e15 else { return location }
        let now = Duration.milliseconds(Int64((seconds * 1000).rounded()))
        // The receiver's clock went back (a replay looping, a clock jump): count afresh from this fix.
        if let last = tap.lastAcquisition, now < last { tap.lastAcquisition = nil }
        if let window = tap.window, now < window.start { tap.window = nil }
        // A duty-cycled receiver delivers one fix per acquisition, already the best it found: take it as
        // this tap's acquisition when due. A continuous one delivers every epoch: a fix up to half its
        // cadence early is still due.
        let slack: Duration
        let receiverAcquires: Bool
        switch receiverMode {
        case .dutyCycled(let receiverCycle)?:
            slack = receiverCycle.interval / 2
            receiverAcquires = true
        default:
            // Epochs carry exact times: a tenth of the interval (at most half an epoch) absorbs rounding.
            slack = min(cycle.interval / 10, epoch / 2)
            receiverAcquires = false
        }
        if let last = tap.lastAcquisition, now < last + cycle.interval - slack { return nil }
        var window = tap.window ?? (start: now, selector: AcquisitionSelector(desiredAccuracy: cycle.desiredAccuracy))
        let met = window.selector.offer(location)
        guard met || receiverAcquires || now - window.start >= cycle.acquisitionTimeout else {
            tap.window = window
            return nil
        }
        tap.window = nil
        // The acquisition counts from when it was due, early or late by the epochs' grid: counted from the
        // fix, the schedule crept (a 3.3 s interval beside a 1 Hz receiver gave a fix every 3 s). After a
        // pause of more than an interval it counts from the fix.
        let due = tap.lastAcquisition.map { $0 + cycle.interval }
        if let due, window.start - due < cycle.interval {
            tap.lastAcquisition = due
        } else {
            tap.lastAcquisition = window.start
        }
        return window.selector.best
    }

    /// One app's view of the shared receiver: a ``LocationSource`` that runs as long as the app's manager
    /// runs it, in the mode the manager asks for.
    package struct Tap: LocationSource {
        let receiver: SharedReceiver

        /// The shared source's name.
        package var name: String { receiver.source.name }

        /// Joins the receiver until cancelled, or until the shared source ends or fails.
        package func run(_ context: LocationSourceContext) async throws {
            let id = Locked<Int?>(nil)
            let receiver = self.receiver
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    let once = Locked(false)
                    let finish: @Sendable (Result<Void, any Error>) -> Void = { result in
                        guard !once.withLock({ done in defer { done = true }; return done }) else { return }
                        continuation.resume(with: result)
                    }
                    let attached = receiver.attach(
                        mode: context.mode, report: { context.report($0) }, finish: finish)
                    id.withLock { $0 = attached }
                    guard let attached else { return }
                    context.forwardModeChanges { mode in receiver.setMode(mode, of: attached) }
                    // A change made between joining and forwarding is not lost.
                    receiver.setMode(context.mode, of: attached)
                    // Cancelled before attaching: the cancellation handler found no id to detach.
                    if Task.isCancelled { receiver.detach(attached) }
                }
            } onCancel: {
                if let attached = id.value { receiver.detach(attached) }
            }
        }
    }
}
