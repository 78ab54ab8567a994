import Clocks
import ConcurrencyExtras
import Foundation
import LocationCore
import LocationTesting
import Testing

@Suite("Application lifecycle", .serialized)
struct ApplicationTests {
    @Test("launch, background, foreground send the iOS messages in order")
    func messagesInOrder() throws {
        let app = Application(clock: TestClock())
        let observer = RecordingObserver()
        app.addObserver(observer)
        #expect(app.applicationState == .notRunning)
        try app.finishLaunching()
        try app.becomeActive()
        #expect(!app.executingInBackground)
        try app.enterBackground()
        #expect(app.applicationState == .background)
        #expect(app.executingInBackground)
        try app.enterForeground()
        #expect(!app.executingInBackground)
        try app.becomeActive()
        app.terminate()
        #expect(
            observer.events == [
                .didFinishLaunching, .didBecomeActive, .willResignActive, .didEnterBackground,
                .willEnterForeground, .didBecomeActive, .willTerminate,
            ])
        #expect(app.applicationState == .notRunning)
    }

    @Test("invalid transitions are rejected with a clear error and change nothing")
    func invalidTransitions() throws {
        let app = Application(clock: TestClock())
        #expect(throws: LocationError.self) { try app.becomeActive() }
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

    @Test("without a task or location mode, background becomes suspended after the grace period")
    func gracePeriod() async throws {
        try await serially {
            let clock = TestClock()
            let app = Application(clock: clock)
            try app.transition(to: .active)
            try app.enterBackground()
            #expect(app.backgroundTimeRemaining == 5)
            await clock.advance(by: .milliseconds(4999))
            #expect(app.applicationState == .background)
            await clock.advance(by: .milliseconds(1))
            #expect(app.applicationState == .suspended)
            #expect(app.backgroundTimeRemaining == 0)
        }
    }

    @Test("backgroundTimeRemaining is infinite in the foreground")
    func infiniteInForeground() throws {
        let app = Application(clock: TestClock())
        try app.transition(to: .active)
        #expect(app.backgroundTimeRemaining == .infinity)
    }

    @Test("a background task keeps the app running; its handler runs before the limit, then it suspends")
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
            #expect(app.applicationState == .suspended)
            #expect(app.openBackgroundTasks.isEmpty)
        }
    }

    @Test("ending the last task after the grace period suspends at once")
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

    @Test("exitsOnSuspend terminates instead of suspending")
    func exitsOnSuspend() async throws {
        try await serially {
            let clock = TestClock()
            let app = Application(configuration: .init(exitsOnSuspend: true), clock: clock)
            let observer = RecordingObserver()
            app.addObserver(observer)
            try app.transition(to: .active)
            try app.enterBackground()
            await clock.advance(by: .seconds(5))
            #expect(app.applicationState == .notRunning)
            #expect(observer.events.last == .willTerminate)
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
