import Foundation
import LocationCore
import Testing

/// Regions with known answers: generated tracks whose crossings are known.
@Suite("RegionMonitor: enter, exit and dwell with hysteresis, indexed")
struct RegionMonitorTests {
    static let start = Date(timeIntervalSince1970: 1_767_261_600)  // 2026-01-01T10:00:00Z
    static let metresPerDegree = Location.meanEarthRadius * .pi / 180

    /// A fix `east` and `north` metres from a centre, at `seconds` after ``start``.
    static func fix(
        _ latitude: Double, _ longitude: Double, east: Double = 0, north: Double = 0, seconds: Double, accuracy: Double? = 5
    ) -> Location {
        // East of 180° is west of it: the longitude wraps into −180…180.
        let shifted = longitude + east / (metresPerDegree * cos(latitude * .pi / 180))
        return Location(
            latitude: latitude + north / metresPerDegree,
            longitude: shifted > 180 ? shifted - 360 : shifted < -180 ? shifted + 360 : shifted,
            horizontalAccuracy: accuracy, timestamp: start.addingTimeInterval(seconds))
    }

    /// Deterministic normal noise (SplitMix64 and Box–Muller), so a failure repeats.
    struct Noise {
        var state: UInt64
        mutating func next() -> Double {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Double((z ^ (z >> 31)) >> 11) / Double(1 << 53)
        }
        mutating func normal(_ sigma: Double) -> Double {
            let u = max(next(), 1e-300), v = next()
            return sigma * (-2 * log(u)).squareRoot() * cos(2 * .pi * v)
        }
    }

    @Test("a straight walk through a region: one enter at the first fix inside, one exit at the second fix clearly outside")
    func straightWalk() throws {
        let region = try CircularRegion(identifier: "home", latitude: 52.5, longitude: 13.4, radius: 100)
        var monitor = RegionMonitor()
        monitor.add(region)
        // West to east through the centre, 1 m/s, a fix a second, from 500 m before to 500 m after.
        let walk = (0...1000).map { Self.fix(52.5, 13.4, east: Double($0) - 500, seconds: Double($0)) }
        let events = monitor.evaluate(walk)
        #expect(events.map(\.kind) == [.enter, .exit])
        // Inside from 100 m before the centre; clearly outside past 100 + 20 + 5 (accuracy) m, twice.
        #expect(abs(events[0].timestamp.timeIntervalSince(Self.start) - 400) <= 1, "\(events[0].timestamp)")
        #expect(abs(events[1].timestamp.timeIntervalSince(Self.start) - 627) <= 1, "\(events[1].timestamp)")
        #expect(events[0].location.distance(from: Location(latitude: 52.5, longitude: 13.4, timestamp: Self.start)) <= 100)
        #expect(monitor.state(of: "home") == .outside)
    }

    @Test("an hour standing on the edge with σ 8 m noise and 8 m accuracy: at most one enter and no exit")
    func edgeNoiseDoesNotFlap() throws {
        let region = try CircularRegion(identifier: "edge", latitude: 48.2, longitude: 16.37, radius: 100)
        var monitor = RegionMonitor()
        monitor.add(region)
        var noise = Noise(state: 42)
        let standing = (0..<3600).map { second in
            Self.fix(48.2, 16.37, east: 100 + noise.normal(8), north: noise.normal(8), seconds: Double(second), accuracy: 8)
        }
        let events = monitor.evaluate(standing)
        #expect(events.count <= 1 && events.allSatisfy { $0.kind == .enter }, "\(events.map(\.kind))")
        // The same noise with the bare test the servers use flaps hundreds of times.
        var flaps = 0, wasInside: Bool?
        for fix in standing {
            let isInside = region.distance(to: fix) < region.radius
            if let wasInside, wasInside != isInside { flaps += 1 }
            wasInside = isInside
        }
        #expect(flaps > 100, "the noise reaches across the edge: \(flaps) crossings")
    }

    @Test("a backlog with three crossings, evaluated at once: enter, exit, enter in fix-time order, each at its fix")
    func backlogInOrder() throws {
        var monitor = RegionMonitor()
        monitor.add(try CircularRegion(identifier: "shop", latitude: 40, longitude: -3.7, radius: 50))
        var fixes: [Location] = []
        var second = 0.0
        for east in stride(from: -300.0, through: 300, by: 10) { fixes.append(Self.fix(40, -3.7, east: east, seconds: second)); second += 10 }
        for east in stride(from: 300.0, through: 0, by: -10) { fixes.append(Self.fix(40, -3.7, east: east, seconds: second)); second += 10 }
        let events = monitor.evaluate(fixes)
        #expect(events.map(\.kind) == [.enter, .exit, .enter])
        #expect(zip(events, events.dropFirst()).allSatisfy { $0.timestamp < $1.timestamp })
        for event in events { #expect(fixes.contains(event.location)) }
    }

    @Test("dwell once per stay after the loitering delay in fix time; again after leaving and coming back")
    func dwell() throws {
        var monitor = RegionMonitor()
        monitor.add(try CircularRegion(identifier: "office", latitude: 35.68, longitude: 139.76, radius: 80, loiteringDelay: .seconds(300)))
        let stay = (0...600).map { Self.fix(35.68, 139.76, seconds: Double($0)) }
        let away = (601...700).map { Self.fix(35.68, 139.76, east: 1000, seconds: Double($0)) }
        let back = (701...1100).map { Self.fix(35.68, 139.76, seconds: Double($0)) }
        let events = monitor.evaluate(stay + away + back)
        #expect(events.map(\.kind) == [.enter, .dwell, .exit, .enter, .dwell])
        #expect(events[1].timestamp == Self.start.addingTimeInterval(300))
        #expect(events[4].timestamp == Self.start.addingTimeInterval(1001))
    }

    @Test("fixes worse than the accuracy limit, or without a coordinate, change nothing and break no run of exit fixes")
    func poorFixesChangeNothing() throws {
        var monitor = RegionMonitor(configuration: .init(accuracyLimit: 50))
        monitor.add(try CircularRegion(identifier: "a", latitude: 10, longitude: 10, radius: 100))
        let result1 = monitor.evaluate(Self.fix(10, 10, seconds: 0, accuracy: 500))
        #expect(result1.isEmpty)
        #expect(monitor.state(of: "a") == .unknown)
        let result2 = monitor.evaluate(Self.fix(10, 10, seconds: 1))
        #expect(result2.map(\.kind) == [.enter])
        let result3 = monitor.evaluate(Self.fix(10, 10, east: 1000, seconds: 2))
        #expect(result3.isEmpty)
        let result4 = monitor.evaluate(Self.fix(10, 10, seconds: 3, accuracy: 51))
        #expect(result4.isEmpty, "a poor fix inside does not reset the run")
        let result5 = monitor.evaluate(Location(latitude: .nan, longitude: 10, timestamp: Self.start))
        #expect(result5.isEmpty)
        let result6 = monitor.evaluate(Self.fix(10, 10, east: 1000, seconds: 4))
        #expect(result6.map(\.kind) == [.exit])
    }

    @Test("an assumed state gives no enter at the first fix; a snapshot taken in the middle of a dwell restores it to the second")
    func assumedStateAndRestart() throws {
        let region = try CircularRegion(identifier: "home", latitude: -33.86, longitude: 151.2, radius: 60, loiteringDelay: .seconds(120))
        var monitor = RegionMonitor()
        monitor.add(region, assuming: .inside)
        let result7 = monitor.evaluate(Self.fix(-33.86, 151.2, seconds: 0))
        #expect(result7.isEmpty)
        _ = monitor.evaluate((1...60).map { Self.fix(-33.86, 151.2, seconds: Double($0)) })
        let data = try JSONEncoder().encode(monitor.snapshot)
        var restored = RegionMonitor(snapshot: try JSONDecoder().decode(RegionMonitor.Snapshot.self, from: data))
        let events = restored.evaluate((61...200).map { Self.fix(-33.86, 151.2, seconds: Double($0)) })
        #expect(events.map(\.kind) == [.dwell])
        #expect(events.first?.timestamp == Self.start.addingTimeInterval(120))
    }

    @Test("regions across the antimeridian, at a pole, of radius 0 and of the whole Earth")
    func edgesOfTheMap() throws {
        var monitor = RegionMonitor()
        monitor.add(try CircularRegion(identifier: "dateline", latitude: -17, longitude: 179.9995, radius: 200))
        monitor.add(try CircularRegion(identifier: "pole", latitude: 89.9999, longitude: 0, radius: 100))
        monitor.add(try CircularRegion(identifier: "point", latitude: 0, longitude: 0, radius: 0))
        monitor.add(try CircularRegion(identifier: "earth", latitude: 0, longitude: 0, radius: CircularRegion.maximumRadius))
        let dateline = monitor.evaluate(Location(latitude: -17, longitude: -179.9995, horizontalAccuracy: 3, timestamp: Self.start))
        #expect(dateline.map(\.region) == ["dateline", "earth"])
        let pole = monitor.evaluate(Location(latitude: 89.99995, longitude: 135, horizontalAccuracy: 3, timestamp: Self.start + 1))
        #expect(pole.map(\.region) == ["pole"])
        let point = monitor.evaluate(Location(latitude: 0, longitude: 0, horizontalAccuracy: 3, timestamp: Self.start + 2))
        // The dateline region, left by two fixes far away (the pole's and this one).
        #expect(point.map { "\($0.region) \($0.kind)" } == ["dateline exit", "point enter"])
        for radius in [-1, 1e9, .nan, .infinity] {
            #expect(throws: LocationError.self) { try CircularRegion(identifier: "bad", latitude: 0, longitude: 0, radius: radius) }
        }
        for identifier in ["", "a\nb", String(repeating: "x", count: 257)] {
            #expect(throws: LocationError.self) { try CircularRegion(identifier: identifier, latitude: 0, longitude: 0, radius: 1) }
        }
    }

    @Test("a removed region gives no event, its slot reused by another gives that one's; the same fix twice, or an older one, is not a second exit fix")
    func removeReuseAndTimeOrder() throws {
        var monitor = RegionMonitor()
        monitor.add(try CircularRegion(identifier: "a", latitude: 1, longitude: 1, radius: 50))
        monitor.add(try CircularRegion(identifier: "b", latitude: 2, longitude: 2, radius: 50))
        let removed = monitor.remove("a")
        let removedAgain = monitor.remove("a")
        #expect(removed && !removedAgain)
        monitor.add(try CircularRegion(identifier: "c", latitude: 3, longitude: 3, radius: 50))
        let result8 = monitor.evaluate(Self.fix(1, 1, seconds: 0))
        #expect(result8.isEmpty, "a is gone")
        let result9 = monitor.evaluate(Self.fix(3, 3, seconds: 1))
        #expect(result9.map(\.region) == ["c"])
        // Replaced with another centre: the old one's place means nothing.
        monitor.add(try CircularRegion(identifier: "c", latitude: 4, longitude: 4, radius: 50))
        #expect(monitor.state(of: "c") == .unknown)
        let result10 = monitor.evaluate(Self.fix(3, 3, seconds: 2))
        #expect(result10.isEmpty)
        let result11 = monitor.evaluate(Self.fix(4, 4, seconds: 3))
        #expect(result11.map(\.kind) == [.enter])
        let away = Self.fix(4, 4, east: 5_000, seconds: 4)
        let result12 = monitor.evaluate(away)
        #expect(result12.isEmpty)
        let result13 = monitor.evaluate(away)
        #expect(result13.isEmpty, "the same fix again is not a second exit fix")
        let result14 = monitor.evaluate(Self.fix(4, 4, east: 5_000, seconds: 3.5))
        #expect(result14.isEmpty, "nor is an older one")
        #expect(monitor.state(of: "c") == .inside)
        let result15 = monitor.evaluate(Self.fix(4, 4, east: 5_000, seconds: 5))
        #expect(result15.map(\.kind) == [.exit])
        #expect(monitor.regions.map(\.identifier) == ["b", "c"])
    }

    @Test("one fix dated a century ahead does not silence the regions; the same region added again keeps its state; a dwell of 0 comes with the enter")
    func oddTimesReAddsAndZeroDwell() throws {
        var monitor = RegionMonitor()
        let region = try CircularRegion(identifier: "r", latitude: 0, longitude: 0, radius: 100, loiteringDelay: .zero)
        monitor.add(region)
        let entered = monitor.evaluate([Self.fix(0, 0, east: 1000, seconds: 0), Self.fix(0, 0, seconds: 1)])
        #expect(entered.map(\.kind) == [.enter, .dwell])
        #expect(entered.allSatisfy { $0.timestamp == Self.start + 1 })
        monitor.add(region)
        #expect(monitor.state(of: "r") == .inside, "an unchanged region added again keeps its state")
        // A bogus date once (a receiver's week rollover): the fixes after it still count.
        let bogus = monitor.evaluate(Self.fix(0, 0, seconds: 3_000_000_000))
        #expect(bogus.isEmpty)
        let left = monitor.evaluate([Self.fix(0, 0, east: 1000, seconds: 4), Self.fix(0, 0, east: 1000, seconds: 5)])
        #expect(left.map(\.kind) == [.exit])
        for name in ["a\u{202E}b", "a\u{2028}b", "a\u{200B}b"] {
            #expect(throws: LocationError.self) { try CircularRegion(identifier: name, latitude: 0, longitude: 0, radius: 1) }
        }
    }

    @Test("10,000 regions over the globe: the index gives exactly the events of looking at every region on every fix")
    func indexAgreesWithEveryRegion() throws {
        var noise = Noise(state: 7)
        var regions: [CircularRegion] = []
        for index in 0..<10_000 {
            let latitude = noise.next() * 170 - 85, longitude = noise.next() * 360 - 180
            let radius = [10.0, 100, 1_000, 50_000, 2_000_000][index % 5]
            regions.append(try CircularRegion(identifier: "r\(index)", latitude: latitude, longitude: longitude, radius: radius))
        }
        // A wandering track that passes through some of them: random jumps to region centres and walks near them.
        var fixes: [Location] = []
        for step in 0..<1_500 {
            let target = regions[Int(noise.next() * Double(regions.count))]
            let offset = (noise.next() - 0.5) * 3 * max(target.radius, 50)
            fixes.append(Self.fix(target.latitude, target.longitude, east: offset, north: noise.normal(30), seconds: Double(step), accuracy: noise.next() * 120))
        }
        var monitor = RegionMonitor()
        for region in regions { monitor.add(region) }
        let indexed = monitor.evaluate(fixes)
        let oracle = Self.everyRegion(regions, fixes, configuration: monitor.configuration)
        #expect(indexed.count == oracle.count && indexed.count > 100, "\(indexed.count) events, oracle \(oracle.count)")
        // The first difference, if any (the lists are long: never print them whole).
        if let first = (0..<min(indexed.count, oracle.count)).first(where: { indexed[$0] != oracle[$0] }) ?? (indexed.count != oracle.count ? min(indexed.count, oracle.count) : nil) {
            let describe = { (event: RegionEvent?) in event.map { "\($0.region) \($0.kind) at \($0.location.latitude),\($0.location.longitude) ±\($0.location.horizontalAccuracy ?? -1) \($0.timestamp)" } ?? "none" }
            Issue.record("event \(first): indexed \(describe(first < indexed.count ? indexed[first] : nil)), oracle \(describe(first < oracle.count ? oracle[first] : nil))")
        }
    }

    /// The rules applied to every region on every fix, without an index.
    static func everyRegion(_ regions: [CircularRegion], _ fixes: [Location], configuration: RegionMonitor.Configuration) -> [RegionEvent] {
        var states = [String: (state: RegionState, votes: Int)]()
        var events: [RegionEvent] = []
        for fix in fixes {
            let accuracy = fix.horizontalAccuracy ?? 0
            guard accuracy <= configuration.accuracyLimit else { continue }
            var these: [RegionEvent] = []
            for region in regions {
                var (state, votes) = states[region.identifier] ?? (.unknown, 0)
                let distance = region.distance(to: fix)
                let clearlyOutside = distance - accuracy > region.radius + max(0.1 * region.radius, 20)
                if state != .inside, distance <= region.radius {
                    (state, votes) = (.inside, 0)
                    these.append(RegionEvent(region: region.identifier, kind: .enter, location: fix))
                } else if state == .inside, clearlyOutside {
                    votes += 1
                    if votes >= configuration.exitConfirmations {
                        (state, votes) = (.outside, 0)
                        these.append(RegionEvent(region: region.identifier, kind: .exit, location: fix))
                    }
                } else if state == .inside {
                    votes = 0
                } else if clearlyOutside {
                    state = .outside
                }
                states[region.identifier] = (state, votes)
            }
            events += these.sorted { $0.region < $1.region }
        }
        return events
    }
}
