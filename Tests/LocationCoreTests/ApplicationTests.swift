import Clocks
import ConcurrencyExtras
import Foundation
import LocationCore
import LocationTesting
import Testing

@Suite("Application lifecycle", .serialized)
struct ApplicationTests {
    @Test("launch, Home, return and terminate send the iOS messages in order")
    func messagesInOrder() throws {
        let app = Application(clock: TestClock())
        let observer = RecordingObserver()
        app.addObserver(observer)
        #expect(app.applicationState == .notRunning)
        try app.finishLaunching()
        try app.becomeActive()
        #expect(!app.executingInBackground)
        try app.enterBackground()
        #expect(app.applicationState == .suspended, "nothing keeps it running")
        #expect(app.executingInBackground)
        try app.enterForeground()
        #expect(!app.executingInBackground)
        try app.becomeActive()
        app.terminate()
        #expect(
            observer.events == [
                .didFinishLaunching, .didBecomeActive, .willResignActive, .didEnterBackground, .didSuspend,
                .willEnterForeground, .didBecomeActive, .willTerminate,
            ])
        #expect(app.applicationState == .notRunning)
        #expect(app.terminationReason == .terminated)
    }

    @Test("invalid transitions are rejected with a clear error and change nothing")
    func invalidTransitions() throws {
        let app = Application(clock: TestClock())
        let notLaunched = #expect(throws: LocationError.self) { try app.becomeActive() }
        #expect(notLaunched?.code == .invalidTransition, "\(String(describing: notLaunched))")
        #expect(notLaunched?.message == "cannot go from notRunning to active; launch it first")
        try app.transition(to: .active)
        do {
            try app.enterForeground()
            Issue.record("entering the foreground from active must fail")
        } catch {
            #expect(error.code == .invalidTransition)
            #expect(error.message == "cannot go from active to inactive")
        }
        #expect(app.applicationState == .active)
        try app.transition(to: .suspended)
        #expect(throws: LocationError(.invalidTransition,
            "cannot go from suspended to background; a suspended app returns through the foreground")) {
            try app.transition(to: .background)
        }
        #expect(app.applicationState == .suspended)
    }

    @Test("transition(to:) walks through intermediate states")
    func transitionPath() throws {
        let app = Application(clock: TestClock())
        let observer = RecordingObserver()
        app.addObserver(observer)
        try app.transition(to: .suspended)
        try app.transition(to: .active)
        #expect(
            observer.events == [
                .didFinishLaunching, .didEnterBackground, .didSuspend, .willEnterForeground, .didBecomeActive,
            ])
    }

    @Test("events are also an async sequence, for any number of consumers")
    func eventSequence() async throws {
        let app = Application(clock: TestClock())
        var first = app.events.makeAsyncIterator()
        var second = app.events.makeAsyncIterator()
        try app.transition(to: .active)
        try app.transition(to: .inactive)
        let expected: [ApplicationEvent] = [.didFinishLaunching, .didBecomeActive, .willResignActive]
        var firstEvents: [ApplicationEvent] = [], secondEvents: [ApplicationEvent] = []
        for _ in expected {
            firstEvents.append(try #require(await first.next()))
            secondEvents.append(try #require(await second.next()))
        }
        #expect(firstEvents == expected)
        #expect(secondEvents == expected, "every consumer gets every event, in the same order")
    }

    @Test("a background task keeps the app running; its handler runs before the limit; open at the limit, the app is purged")
    func backgroundTaskExpiry() async throws {
        try await serially {
            let clock = TestClock()
            let app = Application(clock: clock)
            try app.transition(to: .active)
            let expiredAt = Locked<Duration?>(nil)
            let timeline = Timeline(clock: clock)
            let task = app.beginBackgroundTask(name: "upload") { expiredAt.withLock { $0 = timeline.now } }
            #expect(task != .invalid)
            try app.enterBackground()
            #expect(app.backgroundTimeRemaining == 180)
            await clock.advance(by: .seconds(60))
            #expect(app.applicationState == .background)
            #expect(app.backgroundTimeRemaining == 120)
            await clock.advance(by: .seconds(114))
            #expect(expiredAt.value == nil)
            await clock.advance(by: .seconds(1))
            #expect(expiredAt.value == .seconds(175))
            #expect(app.applicationState == .background)
            await clock.advance(by: .seconds(5))
            #expect(app.applicationState == .notRunning)
            #expect(app.terminationReason == .backgroundTaskExpired(tasks: ["upload"]))
            #expect(app.openBackgroundTasks.isEmpty)
        }
    }

    @Test("ending the last background task suspends the app at once")
    func endingTaskSuspends() async throws {
        try await serially {
            let clock = TestClock()
            let app = Application(clock: clock)
            try app.transition(to: .active)
            let task = app.beginBackgroundTask(name: "sync")
            try app.enterBackground()
            await clock.advance(by: .seconds(30))
            #expect(app.applicationState == .background)
            app.endBackgroundTask(task)
            #expect(app.applicationState == .suspended)
            #expect(app.beginBackgroundTask() == .invalid)
        }
    }

    @Test("observers are held weakly")
    func weakObservers() throws {
        let app = Application(clock: TestClock())
        var observer: RecordingObserver? = RecordingObserver()
        weak let weakObserver = observer
        app.addObserver(observer!)
        observer = nil
        #expect(weakObserver == nil)
        try app.transition(to: .active)
    }
}

/// An observer whose didEnterBackground takes `duration` of the injected clock (and may begin a task first).
private final class SlowBackgroundObserver: ApplicationObserver {
    let clock: ManualClock
    let duration: Duration
    let beginsTask: Bool
    /// `backgroundTimeRemaining` as the handler returns.
    let remainingAtReturn = Locked<TimeInterval?>(nil)

    init(clock: ManualClock, duration: Duration, beginsTask: Bool = false) {
        self.clock = clock
        self.duration = duration
        self.beginsTask = beginsTask
    }

    func applicationDidEnterBackground(_ application: Application) {
        if beginsTask { _ = application.beginBackgroundTask(name: "save") }
        clock.advance(by: duration)
        remainingAtReturn.withLock { $0 = application.backgroundTimeRemaining }
    }
}

/// Something that keeps the app running, standing in for a manager in background location mode.
private final class KeepAliveHolder: Sendable {}

@Suite("Application lifecycle after UIApplication's texts")
struct ApplicationMultitaskingTests {
    private func makeApp(
        _ configuration: ApplicationConfiguration = .init()
    ) -> (Application, ManualClock, RecordingObserver) {
        let clock = ManualClock()
        let app = Application(configuration: configuration, clock: clock)
        let observer = RecordingObserver()
        app.addObserver(observer)
        return (app, clock, observer)
    }

    // MARK: 1. The budget of didEnterBackground

    @Test("a didEnterBackground handler over its 5 s budget without a task gets the app purged, with no willTerminate")
    func didEnterBackgroundOverBudgetPurges() throws {
        let (app, clock, observer) = makeApp()
        let slow = SlowBackgroundObserver(clock: clock, duration: .milliseconds(5001))
        app.addObserver(slow)
        try app.transition(to: .active)
        try app.enterBackground()
        #expect(app.applicationState == .notRunning)
        #expect(observer.events == [.didFinishLaunching, .didBecomeActive, .willResignActive, .didEnterBackground])
        #expect(
            app.terminationReason
                == .didEnterBackgroundOverBudget(elapsed: .milliseconds(5001), budget: .seconds(5)))
        #expect(app.terminationReason?.sentWillTerminate == false)
    }

    @Test("the didEnterBackground budget is a configuration value, 5 s by default")
    func didEnterBackgroundBudgetIsConfigurable() throws {
        #expect(ApplicationConfiguration().didEnterBackgroundBudget == .seconds(5))
        let (app, clock, observer) = makeApp(.init(didEnterBackgroundBudget: .seconds(1)))
        let slow = SlowBackgroundObserver(clock: clock, duration: .seconds(2))
        app.addObserver(slow)
        try app.transition(to: .active)
        try app.enterBackground()
        #expect(app.applicationState == .notRunning)
        #expect(app.terminationReason == .didEnterBackgroundOverBudget(elapsed: .seconds(2), budget: .seconds(1)))
        #expect(observer.events == [.didFinishLaunching, .didBecomeActive, .willResignActive, .didEnterBackground])
    }

    @Test("a didEnterBackground handler that takes exactly its budget is not purged; the app is then suspended")
    func didEnterBackgroundWithinBudget() throws {
        let (app, clock, observer) = makeApp()
        let slow = SlowBackgroundObserver(clock: clock, duration: .seconds(5))
        app.addObserver(slow)
        try app.transition(to: .active)
        try app.enterBackground()
        #expect(app.applicationState == .suspended)
        #expect(
            observer.events == [
                .didFinishLaunching, .didBecomeActive, .willResignActive, .didEnterBackground, .didSuspend,
            ])
    }

    @Test("during didEnterBackground, backgroundTimeRemaining is what is left of the budget")
    func backgroundTimeRemainingDuringDidEnterBackground() throws {
        let (app, clock, _) = makeApp()
        let slow = SlowBackgroundObserver(clock: clock, duration: .seconds(2))
        app.addObserver(slow)
        try app.transition(to: .active)
        try app.enterBackground()
        #expect(slow.remainingAtReturn.value == 3)
        #expect(app.applicationState == .suspended)
    }

    @Test("a didEnterBackground handler that begins a background task may run over the budget")
    func didEnterBackgroundOverBudgetWithTask() throws {
        let (app, clock, observer) = makeApp()
        let slow = SlowBackgroundObserver(clock: clock, duration: .seconds(30), beginsTask: true)
        app.addObserver(slow)
        try app.transition(to: .active)
        try app.enterBackground()
        #expect(app.applicationState == .background)
        #expect(app.openBackgroundTasks == ["save"])
        #expect(observer.events == [.didFinishLaunching, .didBecomeActive, .willResignActive, .didEnterBackground])
    }

    // MARK: 2. No grace period

    @Test("without a task or anything keeping it running, the app is suspended as soon as didEnterBackground returns")
    func suspendsRightAfterDidEnterBackground() throws {
        let (app, _, observer) = makeApp()
        try app.transition(to: .active)
        try app.enterBackground()
        #expect(app.applicationState == .suspended)
        #expect(app.backgroundTimeRemaining == 0)
        #expect(
            observer.events == [
                .didFinishLaunching, .didBecomeActive, .willResignActive, .didEnterBackground, .didSuspend,
            ])
    }

    @Test("an app kept running is suspended as soon as nothing keeps it running any more")
    func suspendsWhenKeepAliveEnds() throws {
        let (app, _, _) = makeApp()
        let holder = KeepAliveHolder()
        app.setKeepsRunning(true, holder: ObjectIdentifier(holder))
        try app.transition(to: .active)
        try app.enterBackground()
        #expect(app.applicationState == .background)
        app.setKeepsRunning(false, holder: ObjectIdentifier(holder))
        #expect(app.applicationState == .suspended)
    }

    // MARK: 3. A task still open at its limit

    @Test("a task still open at its time limit gets the app terminated after its expiration handler, with no willTerminate")
    func taskOpenAtLimitTerminates() throws {
        let (app, clock, observer) = makeApp()
        try app.transition(to: .active)
        let expiredAt = Locked<Duration?>(nil)
        _ = app.beginBackgroundTask(name: "upload") { expiredAt.withLock { $0 = clock.now.offset } }
        try app.enterBackground()
        #expect(app.applicationState == .background)
        clock.advance(by: .seconds(174))
        app.processDueTimers()
        #expect(expiredAt.value == nil)
        clock.advance(by: .seconds(1))
        app.processDueTimers()
        #expect(expiredAt.value == .seconds(175), "the expiration handler runs expirationWarning before the limit")
        #expect(app.applicationState == .background)
        clock.advance(by: .seconds(5))
        app.processDueTimers()
        #expect(app.applicationState == .notRunning)
        #expect(app.terminationReason == .backgroundTaskExpired(tasks: ["upload"]))
        #expect(app.openBackgroundTasks.isEmpty)
        #expect(observer.events == [.didFinishLaunching, .didBecomeActive, .willResignActive, .didEnterBackground])
    }

    @Test("a task ended by its expiration handler lets the app be suspended, not terminated")
    func taskEndedByExpirationHandlerSuspends() throws {
        let (app, clock, observer) = makeApp()
        try app.transition(to: .active)
        let task = Locked(BackgroundTaskIdentifier.invalid)
        task.withLock { identifier in
            identifier = app.beginBackgroundTask(name: "upload") { app.endBackgroundTask(task.value) }
        }
        try app.enterBackground()
        clock.advance(by: .seconds(180))
        app.processDueTimers()
        #expect(app.applicationState == .suspended)
        #expect(observer.events.last == .didSuspend)
    }

    // MARK: 4. Tasks begun while kept running

    @Test("a task begun while kept running in the background counts its time limit from its start")
    func taskBegunWhileKeptRunningCountsFromItsStart() throws {
        let (app, clock, _) = makeApp()
        let holder = KeepAliveHolder()
        app.setKeepsRunning(true, holder: ObjectIdentifier(holder))
        try app.transition(to: .active)
        try app.enterBackground()
        clock.advance(by: .seconds(600))
        app.processDueTimers()
        #expect(app.applicationState == .background)
        let expired = Locked(false)
        _ = app.beginBackgroundTask(name: "upload") { expired.withLock { $0 = true } }
        app.processDueTimers()
        #expect(app.backgroundTimeRemaining == 180)
        #expect(!expired.value)
        #expect(app.openBackgroundTasks == ["upload"])
        clock.advance(by: .seconds(175))
        app.processDueTimers()
        #expect(expired.value)
        #expect(app.applicationState == .background)
    }

    // MARK: 5. backgroundTimeRemaining

    @Test("backgroundTimeRemaining is Double.greatestFiniteMagnitude in the foreground and while kept running with no task")
    func backgroundTimeRemainingIsGreatestFiniteMagnitude() throws {
        let (app, _, _) = makeApp()
        try app.transition(to: .active)
        #expect(app.backgroundTimeRemaining == Double.greatestFiniteMagnitude)
        let holder = KeepAliveHolder()
        app.setKeepsRunning(true, holder: ObjectIdentifier(holder))
        try app.enterBackground()
        #expect(app.applicationState == .background)
        #expect(app.backgroundTimeRemaining == Double.greatestFiniteMagnitude)
    }

    // MARK: 6. Exits on suspend

    @Test("with exitsOnSuspend, Home is willResignActive then willTerminate, with no didEnterBackground")
    func exitsOnSuspendHome() throws {
        let (app, _, observer) = makeApp(.init(exitsOnSuspend: true))
        try app.transition(to: .active)
        try app.enterBackground()
        #expect(app.applicationState == .notRunning)
        #expect(observer.events == [.didFinishLaunching, .didBecomeActive, .willResignActive, .willTerminate])
        #expect(app.terminationReason == .exitedOnLeavingForeground)
    }

    @Test("without multitasking, Home is willResignActive then willTerminate, with no didEnterBackground")
    func withoutMultitaskingHomeTerminates() throws {
        #expect(Application(clock: ManualClock()).isMultitaskingSupported, "supported by default")
        let (app, _, observer) = makeApp(.init(isMultitaskingSupported: false))
        #expect(!app.isMultitaskingSupported)
        try app.transition(to: .active)
        try app.enterBackground()
        #expect(app.applicationState == .notRunning)
        #expect(observer.events == [.didFinishLaunching, .didBecomeActive, .willResignActive, .willTerminate])
        #expect(app.terminationReason == .exitedOnLeavingForeground)
        #expect(app.terminationReason?.sentWillTerminate == true)
    }

    // MARK: 7. A suspended app is killed silently

    @Test("terminating a suspended app sends no willTerminate")
    func suspendedAppKilledWithoutWillTerminate() throws {
        let (app, _, observer) = makeApp()
        try app.transition(to: .active)
        try app.transition(to: .suspended)
        app.terminate()
        #expect(app.applicationState == .notRunning)
        #expect(
            observer.events == [
                .didFinishLaunching, .didBecomeActive, .willResignActive, .didEnterBackground, .didSuspend,
            ])
        #expect(app.terminationReason == .killedWhileSuspended)
    }

    // MARK: 9. A purge is observable

    @Test("the app's host hears of a purge, which sends the app no message; a relaunch clears the reason")
    func hostHearsOfPurge() throws {
        let (app, clock, _) = makeApp()
        let host = RecordingHost()
        app.addObserver(host)
        let reasons = host.reasons
        let slow = SlowBackgroundObserver(clock: clock, duration: .seconds(6))
        app.addObserver(slow)
        try app.transition(to: .active)
        try app.enterBackground()
        #expect(reasons.value == [.didEnterBackgroundOverBudget(elapsed: .seconds(6), budget: .seconds(5))])
        #expect(
            reasons.value.first?.description
                == "purged: didEnterBackground ran 6.0 s, over its 5.0 s budget, without a background task")
        try app.finishLaunching()
        #expect(app.terminationReason == nil)
    }

    // MARK: 8. The message sequences, each as a whole

    @Test("launch into the foreground: didFinishLaunching, didBecomeActive")
    func launchIntoForeground() throws {
        let (app, _, observer) = makeApp()
        try app.finishLaunching()
        try app.becomeActive()
        #expect(observer.events == [.didFinishLaunching, .didBecomeActive])
        #expect(app.applicationState == .active)
    }

    @Test("launch into the background: didFinishLaunching, didEnterBackground, then didSuspend when nothing keeps it running")
    func launchIntoBackground() throws {
        let (app, _, observer) = makeApp()
        try app.transition(to: .background)
        #expect(observer.events == [.didFinishLaunching, .didEnterBackground, .didSuspend])
        #expect(app.applicationState == .suspended)
    }

    @Test("Home: willResignActive, didEnterBackground, didSuspend")
    func home() throws {
        let (app, _, observer) = makeApp()
        try app.transition(to: .active)
        try app.enterBackground()
        #expect(
            observer.events == [
                .didFinishLaunching, .didBecomeActive, .willResignActive, .didEnterBackground, .didSuspend,
            ])
    }

    @Test("return from the background: willEnterForeground, didBecomeActive")
    func returnFromBackground() throws {
        let (app, _, observer) = makeApp()
        let holder = KeepAliveHolder()
        app.setKeepsRunning(true, holder: ObjectIdentifier(holder))
        try app.transition(to: .active)
        try app.enterBackground()
        #expect(app.applicationState == .background)
        try app.enterForeground()
        try app.becomeActive()
        #expect(
            observer.events == [
                .didFinishLaunching, .didBecomeActive, .willResignActive, .didEnterBackground,
                .willEnterForeground, .didBecomeActive,
            ])
    }

    @Test("return from suspended: willEnterForeground, didBecomeActive")
    func returnFromSuspended() throws {
        let (app, _, observer) = makeApp()
        try app.transition(to: .active)
        try app.enterBackground()
        #expect(app.applicationState == .suspended)
        try app.transition(to: .active)
        #expect(
            observer.events == [
                .didFinishLaunching, .didBecomeActive, .willResignActive, .didEnterBackground, .didSuspend,
                .willEnterForeground, .didBecomeActive,
            ])
    }

    @Test("a temporary interruption (an incoming call): willResignActive, then didBecomeActive, never the background")
    func temporaryInterruption() throws {
        let (app, _, observer) = makeApp()
        try app.transition(to: .active)
        try app.resignActive()
        #expect(app.applicationState == .inactive)
        #expect(!app.executingInBackground)
        try app.becomeActive()
        #expect(observer.events == [.didFinishLaunching, .didBecomeActive, .willResignActive, .didBecomeActive])
    }

    @Test("termination from the background (running, not suspended): willTerminate")
    func terminationFromBackground() throws {
        let (app, _, observer) = makeApp()
        let holder = KeepAliveHolder()
        app.setKeepsRunning(true, holder: ObjectIdentifier(holder))
        try app.transition(to: .active)
        try app.enterBackground()
        app.terminate()
        #expect(app.applicationState == .notRunning)
        #expect(
            observer.events == [
                .didFinishLaunching, .didBecomeActive, .willResignActive, .didEnterBackground, .willTerminate,
            ])
    }
}

/// Records every stop it hears of as the app's host.
private final class RecordingHost: ApplicationHost {
    let reasons = Locked<[ApplicationTerminationReason]>([])

    func application(_ application: Application, didStopWith reason: ApplicationTerminationReason) {
        reasons.withLock { $0.append(reason) }
    }
}
