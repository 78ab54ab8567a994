import Clocks
import ConcurrencyExtras
import Foundation
import LocationCore
import LocationTesting
import Testing

@Suite("LocationManager: one ordered event stream", .serialized)
struct EventStreamTests {
    static let everyTenSeconds = ReducedAccuracyPolicy(
        interval: .seconds(10), desiredAccuracy: nil, acquisitionTimeout: .seconds(5))

    @Test("events carry the lifecycle messages, the policy, the held batch and live fixes in the order they happened, exactly as the delegate gets them", .timeLimit(.minutes(1)))
    func eventsInOrder() async throws {
        try await serially {
            let h = try Harness(configuration: .init(reduced: Self.everyTenSeconds))
            await h.start()
            let collected = Locked<[LocationEvent]>([])
            let iterator = Task {
                for await event in h.manager.events { collected.withLock { $0.append(event) } }
            }
            await Task.megaYield()
            h.delegate.reset()
            await h.play(0..<1)
            try h.application.enterBackground()
            await h.settle()
            await h.play(1..<21)
            try h.application.transition(to: .active)
            await h.settle()
            await h.play(21..<22)
            await h.manager.waitForPendingDeliveries()
            try #require(
                await megaYielding { collected.value.count >= h.delegate.events.count },
                "the sequence got \(collected.value.count) of the delegate's \(h.delegate.events.count) events")
            iterator.cancel()

            let events = h.delegate.events.filter {
                if case .sourceStatus = $0 { return false }
                return true
            }
            let held = [1, 11].map { LocationFixtures.walk($0) }
            #expect(events == [
                .locations([LocationFixtures.walk(0)], .live),
                .lifecycle(.willResignActive), .lifecycle(.didEnterBackground), .accuracyPolicy(.reduced),
                .lifecycle(.didSuspend),
                .lifecycle(.willEnterForeground), .locations(held, .held(.foreground)), .accuracyPolicy(.high),
                .lifecycle(.didBecomeActive),
                .locations([LocationFixtures.walk(21)], .live),
            ])
            #expect(collected.value == h.delegate.events, "the sequence and the delegate see the same events in the same order")
        }
    }

    @Test("requestLocation() delivers its one fix through didUpdateLocations, as Core Location does", .timeLimit(.minutes(1)))
    func requestLocationDeliversThroughTheDelegate() async throws {
        try await serially {
            let h = try Harness(configuration: .init(desiredAccuracy: 5))
            h.manager.requestLocation()
            try #require(await megaYielding { h.manager.pendingRequestCount > 0 }, "the request is pending")
            await h.source.waitUntilListening()
            h.source.emit(LocationFixtures.walk(0, accuracy: 20))
            h.source.emit(LocationFixtures.walk(1, accuracy: 4))
            try #require(await megaYielding { h.manager.pendingRequestCount == 0 }, "the request is answered")
            await h.manager.waitForPendingDeliveries()
            try #require(await megaYielding { !h.delegate.deliveries.isEmpty }, "the fix reached the delegate")
            #expect(h.delegate.deliveries == [[LocationFixtures.walk(1, accuracy: 4)]])
            #expect(h.delegate.events.contains(.locations([LocationFixtures.walk(1, accuracy: 4)], .live)))
        }
    }

    @Test("requestLocation() without any fix within its timeout reports no-fix through didFailWithError", .timeLimit(.minutes(1)))
    func requestLocationFailsThroughTheDelegate() async throws {
        try await serially {
            let h = try Harness(configuration: .init(requestTimeout: .seconds(10)))
            h.manager.requestLocation()
            try #require(await megaYielding { h.manager.pendingRequestCount > 0 }, "the request is pending")
            await h.clock.advance(by: .seconds(10))
            try #require(await megaYielding { !h.delegate.errors.isEmpty }, "the failure reached the delegate")
            #expect(h.delegate.errors.map(\.code) == [.noFix])
            #expect(h.delegate.deliveries.isEmpty)
        }
    }
}

@Suite("LocationManager: a request answers under the policy", .serialized)
struct RequestPolicyTests {
    @Test("requestLocation in the background returns the fix coarsened by the reduced policy, never the exact one", .timeLimit(.minutes(1)))
    func requestInTheBackgroundIsCoarsened() async throws {
        try await serially {
            let reduced = ReducedAccuracyPolicy(interval: .seconds(10), desiredAccuracy: nil, coarseningGrid: 1000)
            let h = try Harness(configuration: .init(reduced: reduced))
            try h.application.enterBackground()
            let request = Task { try await h.manager.requestLocation(timeout: .seconds(30)) }
            try #require(await megaYielding { h.manager.pendingRequestCount > 0 }, "the request is pending")
            await h.source.waitUntilListening()
            let exact = LocationFixtures.walk(3)
            h.source.emit(exact)
            let answered = try await request.value
            #expect(answered == reduced.coarsen(exact))
            #expect(answered != exact)
            #expect(answered.horizontalAccuracy == 1000)
        }
    }
}
