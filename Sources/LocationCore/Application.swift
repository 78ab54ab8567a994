import Foundation

/// The application lifecycle, rebuilt after `UIApplication`: states, transitions, observers and background tasks.
///
/// States move `notRunning → inactive → active`, then `active → inactive → background`, and from background,
/// unless something keeps the app running, to `suspended`. Coming back goes
/// `background/suspended → inactive (willEnterForeground) → active (didBecomeActive)`.
///
/// While in the background the app is suspended on its own when
/// - it has no open background task and nothing holds it running (no ``LocationManager`` with
///   background location updates), once ``ApplicationConfiguration/backgroundGracePeriod`` has passed; or
/// - its background tasks reach ``ApplicationConfiguration/backgroundTaskTimeLimit``: their expiration
///   handlers run ``ApplicationConfiguration/expirationWarning`` before that limit, and tasks still open
///   at the limit are ended for them.
///
/// All timing runs on the injected clock.
public final class Application: Sendable {
    /// The timing rules.
    public let configuration: ApplicationConfiguration

    private struct Task {
        var name: String?
        var expirationHandler: (@Sendable () -> Void)?
        var warned = false
    }

    private struct State {
        var state: ApplicationState = .notRunning
        var observers: [ObjectIdentifier: WeakObserver] = [:]
        var hooks: [Int: @Sendable (ApplicationEvent) -> Void] = [:]
        var nextHookID = 0
        var tasks: [Int: Task] = [:]
        var nextTaskID = 0
        var keepAliveHolders: Set<Int> = []
        var enteredBackgroundAt: Duration?
        var timer: _Concurrency.Task<Void, Never>?
        var timerGeneration = 0
    }

    private let timeline: Timeline
    private let state = Locked(State())
    private let delivery = SerialDelivery()
    private let broadcast = Broadcast<ApplicationEvent>()

    /// Creates an application in the `notRunning` state.
    public init(configuration: ApplicationConfiguration = .init(), clock: any Clock<Duration> = ContinuousClock()) {
        self.configuration = configuration
        self.timeline = Timeline(clock: clock)
    }

    deinit {
        state.withLock { $0.timer?.cancel() }
        broadcast.finish()
    }

    // MARK: - State

    /// The current state.
    public var applicationState: ApplicationState { state.withLock { $0.state } }

    /// Whether the app runs in the background: true from didEnterBackground until willEnterForeground.
    public var executingInBackground: Bool {
        let current = applicationState
        return current == .background || current == .suspended
    }

    /// Every lifecycle message from the moment iteration begins; any number of consumers.
    public var events: BroadcastSequence<ApplicationEvent> { BroadcastSequence(broadcast) }

    /// Registers an observer; it is held weakly and removed when it goes away.
    public func addObserver(_ observer: any ApplicationObserver) {
        state.withLock { $0.observers[ObjectIdentifier(observer)] = WeakObserver(observer) }
    }

    /// Unregisters an observer.
    public func removeObserver(_ observer: any ApplicationObserver) {
        _ = state.withLock { $0.observers.removeValue(forKey: ObjectIdentifier(observer)) }
    }

    // MARK: - Transitions

    /// `notRunning → inactive`, sending didFinishLaunching.
    public func finishLaunching() throws(LocationError) {
        try step(from: [.notRunning], to: .inactive, events: [.didFinishLaunching])
    }

    /// `inactive → active`, sending didBecomeActive.
    public func becomeActive() throws(LocationError) {
        try step(from: [.inactive], to: .active, events: [.didBecomeActive])
    }

    /// `active → inactive`, sending willResignActive.
    public func resignActive() throws(LocationError) {
        try step(from: [.active], to: .inactive, events: [.willResignActive])
    }

    /// `inactive → background` (from `active`, resigning first), sending didEnterBackground.
    public func enterBackground() throws(LocationError) {
        if applicationState == .active { try resignActive() }
        try step(from: [.inactive], to: .background, events: [.didEnterBackground])
    }

    /// `background → suspended` (or terminates, with ``ApplicationConfiguration/exitsOnSuspend``).
    public func suspend() throws(LocationError) {
        if configuration.exitsOnSuspend {
            try step(from: [.background], to: .notRunning, events: [.willTerminate])
        } else {
            try step(from: [.background], to: .suspended, events: [.didSuspend])
        }
    }

    /// `background/suspended → inactive`, sending willEnterForeground.
    public func enterForeground() throws(LocationError) {
        try step(from: [.background, .suspended], to: .inactive, events: [.willEnterForeground])
    }

    /// Any running state `→ notRunning`, sending willTerminate. Does nothing when not running.
    public func terminate() {
        try? step(from: [.inactive, .active, .background, .suspended], to: .notRunning, events: [.willTerminate])
    }

    /// Moves to `target` through the allowed intermediate states, sending each message on the way.
    ///
    /// Staying in the same state does nothing. A suspended app cannot go straight back to `background`
    /// (it returns through the foreground), and `notRunning` is reached only by terminating.
    public func transition(to target: ApplicationState) throws(LocationError) {
        let current = applicationState
        if current == target { return }
        switch (current, target) {
        case (_, .notRunning):
            terminate()
        case (.notRunning, _):
            try finishLaunching()
            try transition(to: target)
        case (.active, _):
            if target == .inactive { try resignActive() } else { try enterBackground(); try transition(to: target) }
        case (.inactive, .active):
            try becomeActive()
        case (.inactive, _):
            try enterBackground()
            try transition(to: target)
        case (.background, .suspended):
            try suspend()
        case (.background, _), (.suspended, .inactive), (.suspended, .active):
            try enterForeground()
            try transition(to: target)
        default:
            throw Self.invalid(from: current, to: target)
        }
    }

    private static func invalid(from: ApplicationState, to: ApplicationState) -> LocationError {
        let hint: String
        switch (from, to) {
        case (.suspended, .background): hint = "; a suspended app returns through the foreground"
        case (.notRunning, _): hint = "; launch it first"
        default: hint = ""
        }
        return LocationError(.invalidTransition, "cannot go from \(from.rawValue) to \(to.rawValue)\(hint)")
    }

    private func step(
        from allowed: Set<ApplicationState>, to target: ApplicationState, events: [ApplicationEvent]
    ) throws(LocationError) {
        let result: Result<Void, LocationError> = state.withLock { state in
            guard allowed.contains(state.state) else {
                return .failure(Self.invalid(from: state.state, to: target))
            }
            state.state = target
            switch target {
            case .background:
                state.enteredBackgroundAt = timeline.now
            case .inactive, .active, .notRunning:
                state.enteredBackgroundAt = nil
                for id in state.tasks.keys { state.tasks[id]?.warned = false }
                if target == .notRunning { state.tasks.removeAll() }
            case .suspended:
                break
            }
            for event in events { enqueue(event, state: state) }
            rescheduleTimer(&state)
            return .success(())
        }
        try result.get()
        delivery.drain()
    }

    /// Enqueues an event for observers while the state lock is held, so events keep transition order.
    private func enqueue(_ event: ApplicationEvent, state: State) {
        let observers = state.observers.values.compactMap(\.observer)
        let hooks = state.hooks.sorted { $0.key < $1.key }.map(\.value)
        delivery.enqueue { [weak self] in
            guard let self else { return }
            for hook in hooks { hook(event) }
            for observer in observers { observer.receive(event, from: self) }
            self.broadcast.yield(event)
        }
    }

    /// Returns once every lifecycle message caused so far has reached its observers.
    public func waitForPendingEvents() async {
        await delivery.waitUntilDelivered()
    }

    // MARK: - Background tasks

    /// Marks the start of work that should finish even if the app moves to the background.
    ///
    /// Returns ``BackgroundTaskIdentifier/invalid`` when the app is suspended or not running. The
    /// expiration handler runs shortly before the background time runs out; end the task from it.
    public func beginBackgroundTask(
        name: String? = nil, expirationHandler: (@Sendable () -> Void)? = nil
    ) -> BackgroundTaskIdentifier {
        state.withLock { state in
            guard state.state != .suspended, state.state != .notRunning else { return .invalid }
            state.nextTaskID += 1
            state.tasks[state.nextTaskID] = Task(name: name, expirationHandler: expirationHandler)
            rescheduleTimer(&state)
            return BackgroundTaskIdentifier(rawValue: state.nextTaskID)
        }
    }

    /// Marks the end of a background task; the app may then be suspended.
    public func endBackgroundTask(_ identifier: BackgroundTaskIdentifier) {
        state.withLock { state in
            guard state.tasks.removeValue(forKey: identifier.rawValue) != nil else { return }
            rescheduleTimer(&state)
        }
        evaluateSuspension()
    }

    /// The names of the open background tasks (unnamed ones as `"unnamed"`).
    public var openBackgroundTasks: [String] {
        state.withLock { $0.tasks.sorted { $0.key < $1.key }.map { $0.value.name ?? "unnamed" } }
    }

    /// Seconds the app may still run in the background before it is suspended; infinite in the foreground
    /// and while something keeps it running with no task open, zero when suspended.
    public var backgroundTimeRemaining: TimeInterval {
        state.withLock { state in
            switch state.state {
            case .notRunning, .inactive, .active: return .infinity
            case .suspended: return 0
            case .background:
                guard let deadline = suspensionDeadline(state) else { return .infinity }
                return max(0, (deadline - timeline.now).seconds)
            }
        }
    }

    // MARK: - Keeping the app running (background location mode)

    /// Registers something that keeps a background app from being suspended while `active` is true.
    package func setKeepsRunning(_ active: Bool, holder: ObjectIdentifier) {
        let key = holder.hashValue
        state.withLock { state in
            if active { state.keepAliveHolders.insert(key) } else { state.keepAliveHolders.remove(key) }
            rescheduleTimer(&state)
        }
        evaluateSuspension()
    }

    /// Registers a closure that receives every event before observers do; returns a token for removal.
    package func addHook(_ hook: @escaping @Sendable (ApplicationEvent) -> Void) -> Int {
        state.withLock { state in
            state.nextHookID += 1
            state.hooks[state.nextHookID] = hook
            return state.nextHookID
        }
    }

    /// Removes a hook added with ``addHook(_:)``.
    package func removeHook(_ id: Int) {
        _ = state.withLock { $0.hooks.removeValue(forKey: id) }
    }

    // MARK: - Timers

    /// When the app is due to be suspended, if it is in the background and nothing keeps it running.
    private func suspensionDeadline(_ state: State) -> Duration? {
        guard state.state == .background, let entered = state.enteredBackgroundAt else { return nil }
        if !state.tasks.isEmpty { return entered + configuration.backgroundTaskTimeLimit }
        if !state.keepAliveHolders.isEmpty { return nil }
        return entered + configuration.backgroundGracePeriod
    }

    private func nextDeadline(_ state: State) -> Duration? {
        guard state.state == .background, let entered = state.enteredBackgroundAt else { return nil }
        var deadlines: [Duration] = []
        if !state.tasks.isEmpty {
            let limit = entered + configuration.backgroundTaskTimeLimit
            if state.tasks.values.contains(where: { !$0.warned }) {
                deadlines.append(limit - configuration.expirationWarning)
            }
            deadlines.append(limit)
        }
        if let suspension = suspensionDeadline(state) { deadlines.append(suspension) }
        return deadlines.min()
    }

    private func rescheduleTimer(_ state: inout State) {
        state.timer?.cancel()
        state.timer = nil
        state.timerGeneration += 1
        guard let deadline = nextDeadline(state) else { return }
        let generation = state.timerGeneration
        let timeline = self.timeline
        state.timer = _Concurrency.Task { [weak self] in
            do { try await timeline.sleep(until: deadline) } catch { return }
            self?.timerFired(generation: generation)
        }
    }

    /// Processes every deadline that has passed on the clock now, without waiting for the timer task.
    ///
    /// For a clock advanced by hand from data (a replay driving the lifecycle in track time), so that
    /// the grace period and task expiry take effect before the next fix is handled.
    public func processDueTimers() {
        let generation = state.withLock { $0.timerGeneration }
        timerFired(generation: generation)
    }

    private func timerFired(generation: Int) {
        let handlers: [@Sendable () -> Void] = state.withLock { state in
            guard state.timerGeneration == generation, state.state == .background,
                let entered = state.enteredBackgroundAt
            else { return [] }
            let now = timeline.now
            let limit = entered + configuration.backgroundTaskTimeLimit
            var handlers: [@Sendable () -> Void] = []
            if now >= limit - configuration.expirationWarning {
                for id in state.tasks.keys.sorted() where state.tasks[id]?.warned == false {
                    state.tasks[id]?.warned = true
                    if let handler = state.tasks[id]?.expirationHandler { handlers.append(handler) }
                }
            }
            if now >= limit { state.tasks.removeAll() }
            rescheduleTimer(&state)
            return handlers
        }
        for handler in handlers { handler() }
        evaluateSuspension()
    }

    /// Suspends the app if it is in the background, its time is up, and nothing keeps it running.
    private func evaluateSuspension() {
        let due = state.withLock { state -> Bool in
            guard let deadline = suspensionDeadline(state), state.tasks.isEmpty else { return false }
            return timeline.now >= deadline
        }
        if due { try? suspend() }
    }
}

/// A weak reference to an observer, so the application never keeps one alive.
private final class WeakObserver: Sendable {
    weak let observer: (any ApplicationObserver)?

    init(_ observer: any ApplicationObserver) {
        self.observer = observer
    }
}
