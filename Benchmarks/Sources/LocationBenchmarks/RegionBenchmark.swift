import Foundation
import LocationCore

/// Region evaluation per fix: `RegionMonitor` with its index, beside the bare `distance < radius` test over
/// every region that the servers (OwnTracks Recorder, Traccar, Home Assistant) run on each fix.
public enum RegionBenchmark {
    /// One measurement: nanoseconds a fix, monitored and bare.
    public struct Result: Sendable {
        public var regions: Int
        public var monitorNanosecondsPerFix: Double
        public var bareNanosecondsPerFix: Double
        public var events: Int
    }

    /// Regions scattered over the land-ish latitudes from a fixed seed, radii from 50 m to 5 km, and a
    /// wandering track of `fixes` fixes that visits some of them.
    public static func run(regionCount: Int, fixes: Int = 20_000, runs: Int = 5) throws -> Result {
        var random = SplitMix(seed: 1)
        var regions: [CircularRegion] = []
        for index in 0..<regionCount {
            regions.append(try CircularRegion(
                identifier: "r\(index)", latitude: random.next() * 120 - 60, longitude: random.next() * 360 - 180,
                radius: 50 + random.next() * 4_950))
        }
        // The mean Earth radius LocationCore measures on (IUGG).
        let metresPerDegree = 6_371_008.8 * .pi / 180
        var track: [Location] = []
        var latitude = 48.0, longitude = 11.0
        for step in 0..<fixes {
            // Mostly a walk; now and then a jump to a region's centre, as a trip ends somewhere known.
            if step % 500 == 0, let target = regions.randomElement(using: &random) {
                latitude = target.latitude
                longitude = target.longitude
            }
            latitude += (random.next() - 0.5) * 20 / metresPerDegree
            longitude += (random.next() - 0.5) * 20 / metresPerDegree
            track.append(Location(latitude: latitude, longitude: longitude, horizontalAccuracy: 5, timestamp: Date(timeIntervalSince1970: Double(step))))
        }
        var monitorTimes: [Double] = []
        var bareTimes: [Double] = []
        var events = 0
        for _ in 0..<runs {
            var monitor = RegionMonitor()
            for region in regions { monitor.add(region) }
            // The first fix sweeps every region once; the figure is the steady state after it.
            _ = monitor.evaluate(track[0])
            let start = ContinuousClock.now
            var count = 0
            for fix in track.dropFirst() { count += monitor.evaluate(fix).count }
            monitorTimes.append((ContinuousClock.now - start).seconds / Double(track.count - 1) * 1e9)
            events = count

            var inside = [Bool](repeating: false, count: regions.count)
            let bareStart = ContinuousClock.now
            var flips = 0
            for fix in track.dropFirst() {
                for (index, region) in regions.enumerated() {
                    let now = region.distance(to: fix) < region.radius
                    if now != inside[index] { flips += 1; inside[index] = now }
                }
            }
            bareTimes.append((ContinuousClock.now - bareStart).seconds / Double(track.count - 1) * 1e9)
            if flips < 0 { print(flips) }
        }
        return Result(regions: regionCount, monitorNanosecondsPerFix: Statistics.median(monitorTimes),
                      bareNanosecondsPerFix: Statistics.median(bareTimes), events: events)
    }

    /// SplitMix64: a fixed sequence from a seed.
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        init(seed: UInt64) { state = seed }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func next() -> Double { Double(next() >> 11) / Double(1 << 53) }
    }
}
