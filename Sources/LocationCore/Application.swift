import Foundation

/// The application lifecycle, rebuilt after `UIApplication`: states, transitions, observers and background tasks.
///
/// States move `notRunning → inactive → active`, then `active → inactive → background`, and from background,
/// unless something keeps the app running, to `suspended`. Coming back goes
/// `background/suspended → inactive (willEnterForeground) → active (didBecomeActive)`.
///
/// The rules of iOS's multitasking texts, all timed on the injected clock:
/// - **Leaving the foreground** (``enterBackground()``, the Home button) sends willResignActive (if active)
///   and didEnterBackground. Without multitasking
///   (``ApplicationConfiguration/isMultitaskingSupported``) or with
///   ``ApplicationConfiguration/exitsOnSuspend`` it sends willResignActive then willTerminate instead, and
///   the app is `notRunning`.
/// - **The didEnterBackground budget**: the didEnterBackground handlers may take
///   ``ApplicationConfiguration/didEnterBackgroundBudget`` (5 s). Handlers that take longer without a
///   background task having begun get the app purged: `notRunning`, no willTerminate.
/// - **Suspension**: an app in the background with no open background task and nothing keeping it running
///   (a ``LocationManager`` in background location mode) is suspended as soon as didEnterBackground
///   returns, or as soon as its last task ends or the last thing keeping it running lets go.
/// - **Background tasks** have ``ApplicationConfiguration/backgroundTaskTimeLimit``, counted from
///   didEnterBackground, or from the task's start for a task begun while something keeps the app running
///   in the background. Their expiration handlers run ``ApplicationConfiguration/expirationWarning``
///   before the limit; a task still open at the limit gets the app purged (`notRunning`, no
///   willTerminate).
/// - **Termination**: ``terminate()`` sends willTerminate to an app that runs (foreground or background);
///   a suspended app is killed without a message.
///
/// A purge or a silent kill sends no message, so ``terminationReason`` says why the app stopped.
public final class Application: Sendable {
    /// The timing rules.
    public let configuration: ApplicationConfiguration

    private struct BackgroundTask {
        var name: String?
        var expirationHandler: (@Sendable () -> Void)?
        /// When the task's time limit starts counting; `nil` while the app is in the foreground.
        var start: Duration?
        var warned = false
    }

    /// The didEnterBackground handlers of one entry into the background, around which the budget is timed.
    private struct BackgroundTransition {
        var episode: Int
        var startedAt: Duration?
        /// Whether a background task was open or began while the handlers ran: it lifts the budget.
        var taskBegun: Bool
    }

    private struct State {
        var state: ApplicationState = .notRunning
        var observers: [ObjectIdentifier: WeakObserver] = [:]
        var tasks: [Int: BackgroundTask] = [:]
        var nextTaskID = 0
        var keepAliveHolders: Set<Int> = []
        var enteredBackgroundAt: Duration?
        var backgroundEpisode = 0
        var transition: BackgroundTransition?
        var terminationReason: ApplicationTerminationReason?
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

    /// Whether the app may run in the background at all (``ApplicationConfiguration/isMultitaskingSupported``),
    /// like `UIDevice.isMultitaskingSupported`. Without it, leaving the foreground terminates the app.
    public var isMultitaskingSupported: Bool { configuration.isMultitaskingSupported }

    /// Why the app last stopped running; `nil` before it first stops, and again once it launches anew.
    ///
    /// A purged app (its didEnterBackground handlers ran over their budget, or a background task was still
    /// open at its time limit) and a suspended app that is terminated get no willTerminate: this is the one
    /// place that says they stopped, and why.
    public var terminationReason: ApplicationTerminationReason? { state.withLock { $0.terminationReason } }

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

    /// `active → inactive`, sending willResignActive: a temporary interruption (an incoming call, an
    /// alert) when followed by ``becomeActive()``, or the first half of leaving the foreground.
    public func resignActive() throws(LocationError) {
        try step(from: [.active], to: .inactive, events: [.willResignActive])
    }

    /// Leaves the foreground (the Home button): from `active` it resigns first, then `inactive → background`,
    /// sending didEnterBackground.
    ///
    /// When didEnterBackground returns, an app with no open background task and nothing keeping it running
    /// is suspended at once (didSuspend); one whose handlers ran over
    /// ``ApplicationConfiguration/didEnterBackgroundBudget`` without a background task is purged instead.
    /// Without multitasking, or with ``ApplicationConfiguration/exitsOnSuspend``, the app never enters the
    /// background: it gets willTerminate and is `notRunning`.
    public func enterBackground() throws(LocationError) {
        if applicationState == .active { try resignActive() }
        if !configuration.isMultitaskingSupported || configuration.exitsOnSuspend {
            try step(from: [.inactive], to: .notRunning, events: [.willTerminate], reason: .exitedOnLeavingForeground)
        } else {
            try step(from: [.inactive], to: .background, events: [.didEnterBackground])
        }
    }

    /// `background → suspended`, sending didSuspend, whatever keeps the app running (the system's decision).
    ///
    /// An app with nothing keeping it running is suspended on its own; this is for suspending one that is
    /// kept running. Open background tasks stay open, and their time stops while the app is suspended.
    public func suspend() throws(LocationError) {
        try step(from: [.background], to: .suspended, events: [.didSuspend])
    }

    /// `background/suspended → inactive`, sending willEnterForeground.
    public func enterForeground() throws(LocationError) {
        try step(from: [.background, .suspended], to: .inactive, events: [.willEnterForeground])
    }

    /// Any running state `→ notRunning`. An app that runs (in the foreground or the background) gets
    /// willTerminate; a suspended app is killed without a message. Does nothing when not running.
    public func terminate() {
        let stopped = state.withLock { state -> Bool in
            switch state.state {
            case .notRunning:
                return false
            case .suspended:
                finish(.killedWhileSuspended, &state)
            case .inactive, .active, .background:
                enqueue(.willTerminate, state: state)
                finish(.terminated, &state)
            }
            return true
        }
        if stopped { delivery.drain() }
    }

    /// Moves to `target` through the allowed intermediate states, sending each message on the way.
    ///
    /// Staying in the same state does nothing. A suspended app cannot go straight back to `background`
    /// (it returns through the foreground), and `notRunning` is reached only by terminating. Entering the
    /// background may take the app further than `background` on its own (suspended at once, or terminated
    /// without multitasking, or purged): the walk then ends where the app is.
    public func transition(to target: ApplicationState) throws(LocationError) {
        let current = applicationState
        if current == target { return }
        switch (current, target) {
        case (_, .notRunning):
            terminate()
        case (.notRunning, _):
            try finishLaunching()
            try transition(to: target)
        case (.active, .inactive):
            try resignActive()
        case (.inactive, .active):
            try becomeActive()
        case (.active, _), (.inactive, _):
            // The target is background or suspended.
            try enterBackground()
            if target == .suspended, applicationState == .background { try suspend() }
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
        from allowed: Set<ApplicationState>, to target: ApplicationState, events: [ApplicationEvent],
        reason: ApplicationTerminationReason = .terminated
    ) throws(LocationError) {
        let result: Result<Void, LocationError> = state.withLock { state in
            guard allowed.contains(state.state) else {
                return .failure(Self.invalid(from: state.state, to: target))
            }
            if state.state == .notRunning { state.terminationReason = nil }
            if target == .notRunning {
                for event in events { enqueue(event, state: state) }
                finish(reason, &state)
            } else {
                enter(target, &state)
                for event in events { enqueue(event, state: state) }
            }
            rescheduleTimer(&state)
            return .success(())
        }
        try result.get()
        delivery.drain()
    }

    /// Sets a running state and the bookkeeping that goes with it.
    private func enter(_ target: ApplicationState, _ state: inout State) {
        state.state = target
        switch target {
        case .background:
            let now = timeline.now
            state.enteredBackgroundAt = now
            // Tasks begun in the foreground count their time from now.
            for id in state.tasks.keys where state.tasks[id]?.start == nil { state.tasks[id]?.start = now }
            state.backgroundEpisode += 1
            state.transition = BackgroundTransition(
                episode: state.backgroundEpisode, startedAt: nil, taskBegun: !state.tasks.isEmpty)
        case .inactive, .active:
            state.enteredBackgroundAt = nil
            state.transition = nil
            for id in state.tasks.keys {
                state.tasks[id]?.start = nil
                state.tasks[id]?.warned = false
            }
        case .suspended, .notRunning:
            state.transition = nil
        }
    }

    /// Stops the app: `notRunning`, every task gone, the reason recorded and reported to termination hooks.
    /// Sends no message itself; callers that owe willTerminate enqueue it first.
    private func finish(_ reason: ApplicationTerminationReason, _ state: inout State) {
        enter(.notRunning, &state)
        state.enteredBackgroundAt = nil
        state.tasks.removeAll()
        state.terminationReason = reason
        rescheduleTimer(&state)
        // Whoever hosts the app (a location manager acting for the system) learns of every stop, purges
        // and silent kills included, which send no message.
        let hosts = state.observers.values.compactMap { $0.observer as? any ApplicationHost }
        delivery.enqueue { [weak self] in
            guard let self else { return }
            for host in hosts { host.application(self, didStopWith: reason) }
        }
    }

    /// Suspends a background app, sending didSuspend.
    private func suspendNow(_ state: inout State) {
        enter(.suspended, &state)
        enqueue(.didSuspend, state: state)
        rescheduleTimer(&state)
    }

    /// Enqueues an event for observers while the state lock is held, so events keep transition order.
    private func enqueue(_ event: ApplicationEvent, state: State) {
        let observers = state.observers.values.compactMap(\.observer)
        // didEnterBackground is timed against its budget, and decides suspension when it returns.
        let episode = event == .didEnterBackground ? state.backgroundEpisode : nil
        delivery.enqueue { [weak self] in
            guard let self else { return }
            if let episode { self.backgroundHandlersWillRun(episode: episode) }
            for observer in observers { observer.receive(event, from: self) }
            self.broadcast.yield(event)
            if let episode { self.backgroundHandlersReturned(episode: episode) }
        }
    }

    private func backgroundHandlersWillRun(episode: Int) {
        state.withLock { state in
            guard state.transition?.episode == episode else { return }
            state.transition?.startedAt = timeline.now
        }
    }

    /// After didEnterBackground: purges an app whose handlers ran over budget without a task, and
    /// suspends one that nothing keeps running.
    private func backgroundHandlersReturned(episode: Int) {
        state.withLock { state in
            guard let transition = state.transition, transition.episode == episode, state.state == .background
            else { return }
            state.transition = nil
            let now = timeline.now
            let elapsed = now - (transition.startedAt ?? now)
            let budget = configuration.didEnterBackgroundBudget
            if elapsed > budget, !transition.taskBegun {
                finish(.didEnterBackgroundOverBudget(elapsed: elapsed, budget: budget), &state)
            } else if state.tasks.isEmpty, state.keepAliveHolders.isEmpty {
                suspendNow(&state)
            }
        }
        // Already inside a drain: what this enqueued runs next, in order.
    }

    /// Returns once every lifecycle message caused so far has reached its observers.
    public func waitForPendingEvents() async {
        await delivery.waitUntilDelivered()
    }

    // MARK: - Background tasks

    /// Marks the start of work that should finish even if the app moves to the background.
    ///
    /// Returns ``BackgroundTaskIdentifier/invalid`` when the app is suspended or not running. The task's
    /// ``ApplicationConfiguration/backgroundTaskTimeLimit`` counts from didEnterBackground; a task begun
    /// while something keeps the app running in the background counts from its own start, and one begun
    /// while other tasks alone keep it running shares their time. The expiration handler runs
    /// ``ApplicationConfiguration/expirationWarning`` before the limit: end the task from it, or the app
    /// is purged at the limit. Beginning a task during didEnterBackground lifts that message's budget.
    public func beginBackgroundTask(
        name: String? = nil, expirationHandler: (@Sendable () -> Void)? = nil
    ) -> BackgroundTaskIdentifier {
        state.withLock { state in
            guard state.state != .suspended, state.state != .notRunning else { return .invalid }
            var start: Duration?
            if state.state == .background {
                let now = timeline.now
                if !state.keepAliveHolders.isEmpty {
                    start = now
                } else {
                    start = state.tasks.values.compactMap(\.start).min() ?? state.enteredBackgroundAt ?? now
                }
            }
            state.transition?.taskBegun = true
            state.nextTaskID += 1
            state.tasks[state.nextTaskID] = BackgroundTask(name: name, expirationHandler: expirationHandler, start: start)
            rescheduleTimer(&state)
            return BackgroundTaskIdentifier(rawValue: state.nextTaskID)
        }
    }

    /// Marks the end of a background task; an app that nothing else keeps running is then suspended.
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

    /// Seconds the app may still run in the background, as `UIApplication.backgroundTimeRemaining`.
    ///
    /// `Double.greatestFiniteMagnitude` (DBL_MAX) in the foreground and while something keeps the app
    /// running with no task open; the time to the earliest task's limit while tasks are open; the rest of
    /// the didEnterBackground budget while that message runs; zero when suspended.
    public var backgroundTimeRemaining: TimeInterval {
        state.withLock { state in
            switch state.state {
            case .notRunning, .inactive, .active:
                return .greatestFiniteMagnitude
            case .suspended:
                return 0
            case .background:
                let now = timeline.now
                if let limit = state.tasks.values.compactMap({ taskLimit($0) }).min() {
                    return max(0, (limit - now).seconds)
                }
                if !state.keepAliveHolders.isEmpty { return .greatestFiniteMagnitude }
                if let transition = state.transition {
                    let end = (transition.startedAt ?? now) + configuration.didEnterBackgroundBudget
                    return max(0, (end - now).seconds)
                }
                return 0
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

    // MARK: - Timers

    /// When a task's time runs out, if its time is counting.
    private func taskLimit(_ task: BackgroundTask) -> Duration? {
        task.start.map { $0 + configuration.backgroundTaskTimeLimit }
    }

    private func nextDeadline(_ state: State) -> Duration? {
        guard state.state == .background else { return nil }
        var deadlines: [Duration] = []
        for task in state.tasks.values {
            guard let limit = taskLimit(task) else { continue }
            if !task.warned { deadlines.append(limit - configuration.expirationWarning) }
            deadlines.append(limit)
        }
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
    /// task expiry takes effect before the next fix is handled.
    package func processDueTimers() {
        let generation = state.withLock { $0.timerGeneration }
        timerFired(generation: generation)
    }

    private func timerFired(generation: Int) {
        let handlers: [@Sendable () -> Void]? = state.withLock { state in
            guard state.timerGeneration == generation, state.state == .background else { return nil }
            let now = timeline.now
            var handlers: [@Sendable () -> Void] = []
            for id in state.tasks.keys.sorted() {
                guard let task = state.tasks[id], !task.warned, let limit = taskLimit(task),
                    now >= limit - configuration.expirationWarning
                else { continue }
                state.tasks[id]?.warned = true
                if let handler = task.expirationHandler { handlers.append(handler) }
            }
            rescheduleTimer(&state)
            return handlers
        }
        guard let handlers else { return }
        for handler in handlers { handler() }
        // Tasks still open at their limit once their handlers have run end the app, without a message.
        state.withLock { state in
            guard state.state == .background else { return }
            let now = timeline.now
            let expired = state.tasks.sorted { $0.key < $1.key }
                .filter { taskLimit($0.value).map { now >= $0 } ?? false }
                .map { $0.value.name ?? "unnamed" }
            guard !expired.isEmpty else { return }
            finish(.backgroundTaskExpired(tasks: expired), &state)
        }
        delivery.drain()
    }

    /// Suspends the app if it is in the background, past didEnterBackground, and nothing keeps it running.
    private func evaluateSuspension() {
        state.withLock { state in
            guard state.state == .background, state.transition == nil, state.tasks.isEmpty,
                state.keepAliveHolders.isEmpty
            else { return }
            suspendNow(&state)
        }
        delivery.drain()
    }
}

/// A weak reference to an observer, so the application never keeps one alive.
private final class WeakObserver: Sendable {
    weak let observer: (any ApplicationObserver)?

    init(_ observer: any ApplicationObserver) {
        self.observer = observer
    }
}

/// An observer that hosts the app for the system, such as a location manager: it is told every time the
/// app stops running and why, purges and silent kills included, which send the app no message.
package protocol ApplicationHost: ApplicationObserver {
    /// The app stopped running (after willTerminate, when it got one).
    func application(_ application: Application, didStopWith reason: ApplicationTerminationReason)
}
