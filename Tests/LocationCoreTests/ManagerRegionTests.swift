import Clocks
import Foundation
import LocationCore
import LocationTesting
import Testing

/// Regions and one-shots with a maximum age, through the manager.
@Suite("LocationManager: regions in the event stream, and a one-shot no older than asked", .serialized)
struct ManagerRegionTests {
    /// A region of `radius` metres around the demo walk's fix `index`.
    static func region(at index: Int, radius: Double, dwell: Duration? = nil) throws -> CircularRegion {
        let centre = LocationFixtures.walk(index)
        return try CircularRegion(identifier: "spot", latitude: centre.latitude, longitude: centre.longitude, radius: radius, loiteringDelay: dwell)
    }

    @Test("live fixes through a region: enter right after the first fix inside, exit right after the second clearly outside", .timeLimit(.minutes(1)))
    func liveRegionEvents() async throws {
        try await serially {
            let h = try Harness()
            h.manager.startMonitoring(try Self.region(at: 30, radius: 10))
            await h.start()
            await h.play(0..<80)
            await h.manager.waitForPendingDeliveries()
            let events = h.delegate.events
            let regions = events.compactMap { event -> RegionEvent? in if case .region(let r) = event { r } else { nil } }
            #expect(regions.map(\.kind) == [.enter, .exit])
            let region = try Self.region(at: 30, radius: 10)
            // Enter at the first walk fix within 10 m; exit at the second beyond 10 + 20 + 4.5 m.
            let firstInside = (0..<80).first { region.distance(to: LocationFixtures.walk($0)) <= 10 }
            let clearlyOut = (31..<80).filter { region.distance(to: LocationFixtures.walk($0)) - 4.5 > 30 }
            #expect(regions.first?.location == firstInside.map { LocationFixtures.walk($0) })
            #expect(regions.last?.location == LocationFixtures.walk(clearlyOut[1]))
            // Each right after the locations event of its fix.
            for (index, event) in events.enumerated() {
                guard case .region(let region) = event else { continue }
                #expect(events[index - 1] == .locations([region.location], .live))
            }
            #expect(h.manager.regionState(of: "spot") == .outside)
        }
    }

    @Test("a held batch's region events come after the batch, in fix-time order, each at a fix of the batch", .timeLimit(.minutes(1)))
    func heldBatchRegionEvents() async throws {
        try await serially {
            let reduced = ReducedAccuracyPolicy(interval: .seconds(10), desiredAccuracy: nil, acquisitionTimeout: .seconds(5))
            let h = try Harness(configuration: .init(reduced: reduced))
            h.manager.startMonitoring(try Self.region(at: 60, radius: 15))
            await h.start()
            await h.play(0..<3)
            try h.application.enterBackground()
            await h.settle()
            await h.play(3..<150)
            #expect(h.delegate.events.allSatisfy { if case .region = $0 { false } else { true } }, "nothing while held")
            try h.application.enterForeground()
            await h.manager.waitForPendingDeliveries()
            let events = h.delegate.events
            var found: (index: Int, batch: [Location])?
            for (index, event) in events.enumerated() {
                if case .locations(let locations, let delivery) = event, delivery != .live { found = (index, locations) }
            }
            guard let (batchIndex, batch) = found else {
                Issue.record("no held batch: \(events.count) events")
                return
            }
            let regions = events[(batchIndex + 1)...].compactMap { event -> RegionEvent? in if case .region(let r) = event { r } else { nil } }
            #expect(regions.map(\.kind) == [.enter, .exit], "\(regions.map(\.kind)) from \(batch.count) held fixes")
            #expect(regions.allSatisfy { batch.contains($0.location) })
            #expect(zip(regions, regions.dropFirst()).allSatisfy { $0.timestamp < $1.timestamp })
        }
    }

    @Test("requestLocation(maximumAge:) answers at once with a fix received within the age, never an older one", .timeLimit(.minutes(1)))
    func maximumAge() async throws {
        try await serially {
            let h = try Harness()
            await h.start()
            await h.emit(LocationFixtures.walk(0))
            await h.clock.advance(by: .seconds(5))
            let cached = try await h.manager.requestLocation(maximumAge: .seconds(10), timeout: .seconds(30))
            #expect(cached == LocationFixtures.walk(0), "5 s old, 10 s allowed")
            #expect(h.manager.pendingRequestCount == 0)

            let fresh = Task { try await h.manager.requestLocation(maximumAge: .seconds(2), timeout: .seconds(30)) }
            try #require(await megaYielding { h.manager.pendingRequestCount > 0 }, "5 s old is too old for 2 s: it waits")
            await h.emit(LocationFixtures.walk(1))
            #expect(try await fresh.value == LocationFixtures.walk(1))
        }
    }

    @Test("requestLocation(maximumAge:accuracy:) with no fix that accurate in time is accuracy-not-met naming the best, not a success", .timeLimit(.minutes(1)))
    func accuracyIsABound() async throws {
        try await serially {
            let h = try Harness()
            await h.start()
            let request = Task { try await h.manager.requestLocation(maximumAge: .zero, timeout: .seconds(10), accuracy: 5) }
            try #require(await megaYielding { h.manager.pendingRequestCount > 0 })
            await h.emit(LocationFixtures.walk(0, accuracy: 20))
            await h.emit(LocationFixtures.walk(1, accuracy: 12))
            await h.clock.advance(by: .seconds(10))
            await #expect {
                _ = try await request.value
            } throws: { error in
                (error as? LocationError)?.code == .accuracyNotMet && (error as? LocationError)?.message.contains("±12.0 m") == true
            }
        }
    }
}
