import Clocks
import ConcurrencyExtras
import Foundation
import LocationCore
import LocationTesting
import Testing

@Suite("LocationManager: delivery and policies", .serialized)
struct LocationManagerTests {
    @Test("high policy delivers every epoch, one array per fix, oldest first")
    func highPolicyDeliversEveryEpoch() async throws {
        try await serially {
            let h = try Harness()
            await h.start()
            await h.play(0..<10)
            #expect(h.delegate.deliveries == LocationFixtures.walk(count: 10).map { [$0] })
            #expect(h.manager.location == LocationFixtures.walk(9))
            #expect(h.manager.accuracyPolicy == .high)
        }
    }

    @Test("the user's distance filter thins the high policy")
    func distanceFilter() async throws {
        try await serially {
            // Walk fixes are about 1.4 m apart: a 5 m filter keeps every 4th.
            let h = try Harness(configuration: .init(distanceFilter: 5))
            await h.start()
            await h.play(0..<20)
            let delivered = h.delegate.locations
            #expect(delivered.count == 5)
            for (a, b) in zip(delivered, delivered.dropFirst()) { #expect(b.distance(from: a) >= 5) }
        }
    }

    @Test("the policy switches when executingInBackground flips, and the delegate hears it")
    func policySwitch() async throws {
        try await serially {
            let h = try Harness(configuration: .init(allowsBackgroundLocationUpdates: true))
            await h.start()
            #expect(!h.manager.executingInBackground)
            try h.application.enterBackground()
            #expect(h.manager.executingInBackground)
            #expect(h.manager.accuracyPolicy == .reduced)
            try h.application.transition(to: .active)
            #expect(h.manager.accuracyPolicy == .high)
            #expect(h.delegate.policies == [.reduced, .high])
        }
    }

    @Test("reduced policy: one fix per interval, ending at the first accurate fix, receiver closed between")
    func reducedCadence() async throws {
        try await serially {
            let reduced = ReducedAccuracyPolicy(interval: .seconds(60), desiredAccuracy: 10, acquisitionTimeout: .seconds(30))
            let h = try Harness(configuration: .init(allowsBackgroundLocationUpdates: true, reduced: reduced))
            await h.start()
            try h.application.enterBackground()
            await h.settle()
            h.delegate.reset()
            // Each minute: 3 s of 25 m fixes, then 4 m fixes.
            await h.play(0..<300) { index in index % 60 < 3 ? 25 : 4 }
            let delivered = h.delegate.locations
            #expect(delivered.count == 5)
            #expect(delivered.allSatisfy { $0.horizontalAccuracy == 4 })
            let seconds = delivered.map { Int($0.timestamp.timeIntervalSince(LocationFixtures.epoch)) }
            #expect(seconds == [3, 63, 123, 183, 243])
            // The receiver was open 4 s a minute (three 25 m fixes, then the 4 m one that ends the
            // acquisition): 5 × 4 fixes read, the other 280 never.
            #expect(h.source.heardCount == 20)
            #expect(h.source.missedCount == 280)
            #expect(h.application.applicationState == .background)
        }
    }

    @Test("reduced policy: with no accurate fix, the best one seen at the timeout is delivered")
    func reducedFallback() async throws {
        try await serially {
            let reduced = ReducedAccuracyPolicy(interval: .seconds(60), desiredAccuracy: 10, acquisitionTimeout: .seconds(20))
            let h = try Harness(configuration: .init(allowsBackgroundLocationUpdates: true, reduced: reduced))
            await h.start()
            try h.application.enterBackground()
            await h.settle()
            h.delegate.reset()
            // Accuracy 50 m except a 30 m fix at second 7 of each minute: never good enough.
            await h.play(0..<120) { index in index % 60 == 7 ? 30 : 50 }
            let delivered = h.delegate.locations
            #expect(delivered.count == 2)
            #expect(delivered.map(\.horizontalAccuracy) == [30, 30])
            #expect(delivered.map { Int($0.timestamp.timeIntervalSince(LocationFixtures.epoch)) } == [7, 67])
        }
    }

    @Test("reduced policy reports no fix when an acquisition hears nothing")
    func reducedNoFix() async throws {
        try await serially {
            let reduced = ReducedAccuracyPolicy(interval: .seconds(60), acquisitionTimeout: .seconds(20))
            let h = try Harness(configuration: .init(allowsBackgroundLocationUpdates: true, reduced: reduced))
            await h.start()
            try h.application.enterBackground()
            await h.settle()
            for _ in 0..<25 { await h.clock.advance(by: .seconds(1)) }
            #expect(h.delegate.errors.map(\.code) == [.noFix])
            #expect(h.delegate.locations.isEmpty)
        }
    }

    @Test("reduced policy reports a run of empty acquisitions twice: when it starts, and its length when a fix comes")
    func reducedNoFixRunIsReportedOnce() async throws {
        try await serially {
            let reduced = ReducedAccuracyPolicy(interval: .seconds(60), acquisitionTimeout: .seconds(20))
            let h = try Harness(configuration: .init(allowsBackgroundLocationUpdates: true, reduced: reduced))
            await h.start()
            try h.application.enterBackground()
            await h.settle()
            // Ten minutes without a fix: ten empty acquisitions.
            for _ in 0..<600 {
                await h.clock.advance(by: .seconds(1))
                await Task.megaYield()
            }
            #expect(h.delegate.errors.map(\.code) == [.noFix])
            await h.source.waitUntilListening()
            await h.play(600..<605)
            #expect(h.delegate.errors.map(\.code) == [.noFix, .sourceRecovered])
            #expect(h.delegate.errors.last?.message == "a fix again after 10 acquisitions without one", "\(h.delegate.errors)")
            #expect(h.delegate.locations.count == 1)
        }
    }

    @Test("reduced policy can coarsen coordinates to a grid")
    func coarsening() async throws {
        try await serially {
            let reduced = ReducedAccuracyPolicy(interval: .seconds(10), desiredAccuracy: nil, coarseningGrid: 1000)
            let h = try Harness(configuration: .init(allowsBackgroundLocationUpdates: true, reduced: reduced))
            await h.start()
            try h.application.enterBackground()
            await h.settle()
            h.delegate.reset()
            await h.play(0..<30)
            let delivered = h.delegate.locations
            #expect(delivered.count == 3)
            for location in delivered {
                #expect(location.horizontalAccuracy == 1000)
                // The fix it was made from: the walk's fix of the same second.
                let index = Int(location.timestamp.timeIntervalSince(LocationFixtures.epoch))
                let original = LocationFixtures.walk(index)
                // Latitude on a grid of 1000 m (1000 / 111,320 degrees), the nearest line to the fix.
                let step = 1000 / 111_320.0
                let cells = location.latitude / step
                #expect(abs(cells - cells.rounded()) < 1e-6)
                #expect(abs(location.latitude - original.latitude) <= step / 2)
                // Longitude on a grid of 1000 m at that latitude, which is wider in degrees.
                let longitudeStep = step / cos(location.latitude * .pi / 180)
                let longitudeCells = location.longitude / longitudeStep
                #expect(abs(longitudeCells - longitudeCells.rounded()) < 1e-6, "\(location.longitude)")
                #expect(abs(location.longitude - original.longitude) <= longitudeStep / 2, "\(location.longitude)")
                #expect(location.longitude != original.longitude)
            }
        }
    }

    @Test("updates carries exactly what the delegate gets, to every consumer")
    func manyConsumers() async throws {
        try await serially {
            let h = try Harness()
            var consumers = (0..<5).map { _ in h.manager.updates.makeAsyncIterator() }
            await h.start()
            await h.play(0..<4)
            for index in consumers.indices {
                var received: [[Location]] = []
                for _ in 0..<4 { received.append(try #require(await consumers[index].next())) }
                #expect(received == h.delegate.deliveries)
            }
        }
    }

    @Test("a consumer of updates that stops reading keeps only the newest deliveries; the rest are counted", .timeLimit(.minutes(1)))
    func slowUpdatesConsumerIsBoundedAndCounted() async throws {
        try await serially {
            let h = try Harness(configuration: .init(updatesBufferLimit: 8))
            var stalled = h.manager.updates.makeAsyncIterator()
            var keepingUp = h.manager.updates.makeAsyncIterator()
            await h.start()
            var kept: [[Location]] = []
            for round in 0..<10 {
                await h.play(round * 5..<(round + 1) * 5)
                for _ in 0..<5 { kept.append(try #require(await keepingUp.next())) }
            }
            #expect(h.delegate.deliveries.count == 50, "the delegate is never skipped")
            #expect(kept == h.delegate.deliveries, "a consumer that keeps up loses nothing")
            #expect(h.manager.missedUpdateCount == 42, "the stalled consumer lost the 42 oldest, and they are counted")
            var late: [[Location]] = []
            for _ in 0..<8 { late.append(try #require(await stalled.next())) }
            #expect(late == Array(h.delegate.deliveries.suffix(8)), "it still gets the newest, in order")
        }
    }

    @Test("updates ends when the source runs out")
    func updatesEndWithSource() async throws {
        try await serially {
            let h = try Harness()
            let collected = Task {
                var all: [[Location]] = []
                for await delivery in h.manager.updates { all.append(delivery) }
                return all
            }
            await Task.megaYield()
            await h.start()
            await h.play(0..<3)
            h.source.finish()
            let all = await collected.value
            #expect(all.count == 3)
            #expect(h.manager.sourceStatus == .ended)
            #expect(!h.manager.isUpdatingLocation)
        }
    }

    @Test("a failing source reaches the delegate as an error and the status becomes unavailable")
    func sourceFailure() async throws {
        try await serially {
            let h = try Harness()
            await h.start()
            h.source.fail(LocationError(.sourceUnavailable, "gpsd at localhost:2947 refused the connection"))
            #expect(await eventually { h.manager.sourceStatus == .unavailable })
            #expect(h.delegate.errors.map(\.code) == [.sourceUnavailable])
        }
    }

    @Test("stopping closes the receiver")
    func stopCloses() async throws {
        try await serially {
            let h = try Harness()
            await h.start()
            h.manager.stopUpdatingLocation()
            #expect(await eventually { !h.source.isListening })
            #expect(!h.source.emit(LocationFixtures.walk(0)))
            #expect(h.delegate.locations.isEmpty)
        }
    }
}

@Suite("LocationManager: one-shot requests", .serialized)
struct RequestLocationTests {
    @Test("returns the first fix meeting desiredAccuracy and stops the source")
    func firstAccurateFix() async throws {
        try await serially {
            let h = try Harness(configuration: .init(desiredAccuracy: 10))
            let request = Task { try await h.manager.requestLocation(timeout: .seconds(30)) }
            await h.settle()
            await h.emit(LocationFixtures.walk(0, accuracy: 50))
            await h.emit(LocationFixtures.walk(1, accuracy: 8))
            await h.emit(LocationFixtures.walk(2, accuracy: 3))
            let location = try await request.value
            #expect(location == LocationFixtures.walk(1, accuracy: 8))
            #expect(await eventually { !h.source.isListening })
            #expect(h.delegate.locations.isEmpty)
        }
    }

    @Test("returns the best fix seen when the timeout hits")
    func bestAtTimeout() async throws {
        try await serially {
            let h = try Harness(configuration: .init(desiredAccuracy: 5))
            let request = Task { try await h.manager.requestLocation(timeout: .seconds(10)) }
            await h.settle()
            await h.emit(LocationFixtures.walk(0, accuracy: 50))
            await h.emit(LocationFixtures.walk(1, accuracy: 20))
            await h.emit(LocationFixtures.walk(2, accuracy: 30))
            await h.clock.advance(by: .seconds(10))
            #expect(try await request.value == LocationFixtures.walk(1, accuracy: 20))
        }
    }

    @Test("throws no-fix when nothing arrives in time")
    func noFix() async throws {
        try await serially {
            let h = try Harness()
            let request = Task { try await h.manager.requestLocation(timeout: .seconds(10)) }
            await h.settle()
            await h.clock.advance(by: .seconds(10))
            let result = await request.result
            #expect(throws: LocationError(.noFix, "no fix from script within 10 s")) { try result.get() }
        }
    }

    @Test("cancellation ends the request with a cancelled error")
    func cancelled() async throws {
        try await serially {
            let h = try Harness()
            let request = Task { try await h.manager.requestLocation(timeout: .seconds(10)) }
            await h.settle()
            request.cancel()
            let result = await request.result
            let error = #expect(throws: LocationError.self) { try result.get() }
            #expect(error?.code == .cancelled, "\(String(describing: error))")
            #expect(error?.message == "the location request was cancelled")
        }
    }

    @Test("a source that ends before a fix fails the request")
    func sourceEnds() async throws {
        try await serially {
            let h = try Harness()
            let request = Task { try await h.manager.requestLocation(timeout: .seconds(10)) }
            await h.settle()
            h.source.finish()
            let result = await request.result
            #expect((result.failure as? LocationError)?.code == .noFix)
        }
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { error } else { nil }
    }
}
