import Clocks
import ConcurrencyExtras
import Foundation
import LocationCore
import LocationTesting
import Testing

/// Stationary detection, the outlier gate and deferred delivery, on generated tracks with known answers.
@Suite("LocationManager: motion, outliers and deferred delivery", .serialized)
struct MotionAndDeferralTests {
    static func walkStopWalk(walk: Int, stop: Int, noise: Double, seed: UInt64 = 7) -> [Location] {
        LocationFixtures.walkStopWalk(walk: walk, stop: stop, noise: noise, seed: seed)
    }

    static func motions(_ events: [LocationEvent]) -> [MotionEvent] {
        events.compactMap { event -> MotionEvent? in if case .motion(let m) = event { m } else { nil } }
    }

    @Test("a 20-minute stop between two walks: one stationary event within a minute of stopping, one moving event within 15 s of walking on")
    func aStopBetweenTwoWalks() {
        let track = Self.walkStopWalk(walk: 300, stop: 1200, noise: 5)
        var detector = MotionDetector()
        var changes: [(Int, MotionState)] = []
        for (second, fix) in track.enumerated() {
            if let change = detector.evaluate(fix) { changes.append((second, change)) }
        }
        #expect(changes.map(\.1) == [.stationary, .moving], "\(changes)")
        #expect(changes.count == 2 && (300...365).contains(changes[0].0) && (1500...1515).contains(changes[1].0), "\(changes)")
    }

    @Test("a slow walk at 0.4 m/s, below the pause speed, is never stationary; an hour parked with σ 8 m noise (20 seeds) stops once and never moves")
    func slowWalkAndNoisyParking() {
        var detector = MotionDetector()
        var changes: [MotionState] = []
        for second in 0..<1800 {
            var fix = LocationFixtures.walk(0)
            fix.latitude += Double(second) * 0.4 / 111_195
            fix.timestamp = LocationFixtures.epoch.addingTimeInterval(Double(second))
            fix.speed = 0.4
            if let change = detector.evaluate(fix) { changes.append(change) }
        }
        #expect(changes.isEmpty, "\(changes)")

        for seed in UInt64(1)...20 {
            let parked = Self.walkStopWalk(walk: 0, stop: 3600, noise: 8, seed: seed)
            var still = MotionDetector()
            var parkedChanges: [MotionState] = []
            for fix in parked { if let change = still.evaluate(fix) { parkedChanges.append(change) } }
            #expect(parkedChanges == [.stationary], "seed \(seed): \(parkedChanges.prefix(6))")
        }
    }

    @Test("through the manager: the motion events follow their fix, and while still the fixes are delivered at the stop's centroid, or not at all")
    func managerDeliversAtTheCentroid() async throws {
        for delivery in StationaryDelivery.allCases {
            try await serially {
                let h = try Harness(configuration: .init(motion: .init(), whileStationary: delivery))
                await h.start()
                let track = Self.walkStopWalk(walk: 60, stop: 300, noise: 5)
                for fix in track { await h.emit(fix) }
                await h.manager.waitForPendingDeliveries()
                let events = h.delegate.events
                let motions = Self.motions(events)
                #expect(motions.map(\.state) == [.stationary, .moving])
                guard let stop = motions.first else { return }
                var delivered: [Location] = []
                for event in events { if case .locations(let fixes, _) = event { delivered += fixes } }
                let stopIndex = events.firstIndex(of: .motion(stop)) ?? 0
                #expect(events[stopIndex - 1] == .locations([stop.location], .live) || delivery == .nothing)
                let during = delivered.filter { $0.timestamp > stop.location.timestamp && $0.timestamp < motions[1].location.timestamp }
                switch delivery {
                case .centroid:
                    #expect(!during.isEmpty)
                    #expect(Set(during.map { "\($0.latitude),\($0.longitude)" }).count <= during.count)
                    // Every fix while still is within a few metres of the stop, whatever its own noise.
                    #expect(during.allSatisfy { $0.distance(from: stop.location) < 3 })
                case .nothing:
                    #expect(during.isEmpty, "\(during.count) fixes delivered while still")
                }
                #expect(h.manager.motionState == .moving)
            }
        }
    }

    @Test("the outlier gate rejects a 5 km jump for one second, counts it and says so, never delivers it, and it changes no region")
    func outlierGateRejectsAJump() async throws {
        try await serially {
            let h = try Harness(configuration: .init(outlierGate: OutlierGate(maximumSpeed: 100)))
            let centre = LocationFixtures.walk(20)
            var far = centre
            far.latitude += 5_000 / 111_195
            h.manager.startMonitoring(try CircularRegion(identifier: "far", latitude: far.latitude, longitude: far.longitude, radius: 100))
            await h.start()
            for index in 0..<40 {
                var fix = LocationFixtures.walk(index)
                if index == 20 { fix.latitude = far.latitude }
                await h.emit(fix)
            }
            await h.manager.waitForPendingDeliveries()
            let events = h.delegate.events
            var delivered: [Location] = []
            for event in events { if case .locations(let fixes, _) = event { delivered += fixes } }
            #expect(delivered.count == 39)
            #expect(!delivered.contains { $0.timestamp == LocationFixtures.walk(20).timestamp })
            #expect(h.manager.rejectedOutlierCount == 1)
            let errors = events.compactMap { event -> LocationError? in if case .error(let e) = event { e } else { nil } }
            #expect(errors.map(\.code) == [.outlierRejected])
            #expect(!events.contains { if case .region = $0 { true } else { false } })
        }
    }

    @Test("the gate re-anchors when the receiver truly moved: the third agreeing fix after a jump is accepted, and a tunnel's hour-long gap passes")
    func outlierGateReanchors() {
        let gate = OutlierGate(maximumSpeed: 50)
        var memory = OutlierGate.Memory()
        var verdicts: [Bool] = []
        for index in 0..<10 {
            var fix = LocationFixtures.walk(index)
            if index >= 3 { fix.latitude += 0.1 }  // 11 km away from fix 3 on, for good
            if case .accepted = gate.judge(fix, &memory) { verdicts.append(true) } else { verdicts.append(false) }
        }
        #expect(verdicts == [true, true, true, false, false, true, true, true, true, true])
        var tunnel = LocationFixtures.walk(10_000)
        tunnel.timestamp = LocationFixtures.walk(9).timestamp.addingTimeInterval(3600)
        tunnel.latitude += 0.5  // 55 km in an hour
        #expect(gate.judge(tunnel, &memory) == .accepted)
    }

    @Test("deferred delivery: fixes come as one deferred batch no later than the delay after the oldest, flush() delivers at once, and the waiting fixes are journaled", .timeLimit(.minutes(1)))
    func deferredDelivery() async throws {
        try await serially {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("defer-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let journal = directory.appendingPathComponent("journal").path
            let h = try Harness(configuration: .init(journalPath: journal, maximumUpdateDelay: .seconds(10)))
            await h.start()
            await h.play(0..<25)
            await h.manager.waitForPendingDeliveries()
            let batches = h.delegate.events.compactMap { event -> [Location]? in
                if case .locations(let fixes, let delivery) = event { return delivery == .held(.deferred) ? fixes : [] } else { return nil }
            }
            #expect(batches.allSatisfy { !$0.isEmpty }, "only deferred batches: \(batches.map(\.count))")
            #expect(batches.map(\.count) == [10, 10], "\(batches.map(\.count))")
            // The five since wait, journaled; flush() delivers them now.
            #expect(h.manager.heldLocations.count == 5)
            var info = stat()
            #expect(stat(journal, &info) == 0 && info.st_size > 8, "the waiting fixes are in the journal")
            h.manager.flush()
            await h.manager.waitForPendingDeliveries()
            let last = h.delegate.events.last
            #expect(last == .locations(LocationFixtures.walk(count: 5, from: 20), .held(.deferred)))
            // Nothing waiting: no timer delivers an empty batch.
            await h.clock.advance(by: .seconds(30))
            await h.manager.waitForPendingDeliveries()
            #expect(h.delegate.events.last == last)
        }
    }

    @Test("pausesWhenStationary: while still the receiver is read once per 30 s check, and it resumes at the first check that has moved", .timeLimit(.minutes(1)))
    func pausesWhileStill() async throws {
        try await serially {
            let h = try Harness(configuration: .init(motion: .init(), pausesWhenStationary: true))
            await h.start()
            let track = Self.walkStopWalk(walk: 120, stop: 900, noise: 4)
            var heardAtStop = 0, missedAtStop = 0
            for (second, fix) in track.enumerated() {
                if second == 300 { (heardAtStop, missedAtStop) = (h.source.heardCount, h.source.missedCount) }
                if second == 1020 {
                    // 720 s of the stop after the first three minutes: a check each 30 s, each one or a few fixes.
                    let heard = h.source.heardCount - heardAtStop, missed = h.source.missedCount - missedAtStop
                    #expect(heard <= 72 && missed >= 640, "heard \(heard), missed \(missed) while paused")
                }
                h.source.emit(fix)
                await Task.megaYield()
                await h.clock.advance(by: .seconds(1))
            }
            await h.manager.waitForPendingDeliveries()
            let motions = Self.motions(h.delegate.events)
            #expect(motions.map(\.state) == [.stationary, .moving])
            let resumed = motions.last.map { Int($0.location.timestamp.timeIntervalSince(LocationFixtures.epoch)) } ?? 0
            #expect((1020...1055).contains(resumed), "resumed at \(resumed) s")
            // Walking again: every fix is read.
            let tail = h.delegate.locations.filter { $0.timestamp > (motions.last?.location.timestamp ?? .distantFuture) }
            #expect(tail.count >= 1140 - resumed - 5, "\(tail.count) fixes after resuming at \(resumed)")
        }
    }

    @Test("out and back at 4 m/s, three times: the halves of a window around a U-turn have the same mean, and it is never a stop")
    func uTurnsAreNotStops() {
        var detector = MotionDetector()
        var changes: [MotionState] = []
        var fix = LocationFixtures.walk(0)
        var north = 0.0, heading = 4.0
        for second in 0..<600 {
            north += heading
            if second % 100 == 99 { heading = -heading }
            fix.latitude = LocationFixtures.walk(0).latitude + north / 111_195
            fix.timestamp = LocationFixtures.epoch.addingTimeInterval(Double(second))
            fix.speed = 4
            if let change = detector.evaluate(fix) { changes.append(change) }
        }
        #expect(changes.isEmpty, "\(changes)")
    }

    @Test("pausesWhenStationary with a deferral: each check is delivered at once, the first that has moved resumes, and no fix of the walk on is lost", .timeLimit(.minutes(1)))
    func pausesWithADeferral() async throws {
        try await serially {
            let h = try Harness(configuration: .init(motion: .init(), pausesWhenStationary: true, maximumUpdateDelay: .seconds(45)))
            await h.start()
            let track = Self.walkStopWalk(walk: 120, stop: 300, noise: 4)
            for fix in track {
                h.source.emit(fix)
                await Task.megaYield()
                await h.clock.advance(by: .seconds(1))
            }
            h.manager.flush()
            await h.manager.waitForPendingDeliveries()
            let motions = Self.motions(h.delegate.events)
            #expect(motions.map(\.state) == [.stationary, .moving])
            let resumed = motions.last.map { Int($0.location.timestamp.timeIntervalSince(LocationFixtures.epoch)) } ?? 0
            #expect((420...455).contains(resumed), "resumed at \(resumed) s")
            let after = h.delegate.locations.filter { $0.timestamp > (motions.last?.location.timestamp ?? .distantFuture) }
            #expect(after.count >= 540 - resumed - 3, "\(after.count) fixes after resuming at \(resumed)")
        }
    }
}
