import Foundation
import LocationCore

/// Deterministic locations for tests and benchmarks.
public enum LocationFixtures {
    /// The start of every fixture track: 2024-05-01T06:00:00Z.
    public static let epoch = Date(timeIntervalSince1970: 1_714_543_200)

    /// Fix number `index` of a walk heading north-east at about 1.4 m/s, one fix per second.
    public static func walk(
        _ index: Int, accuracy: Double? = 4.5, source: String? = "script", start: Date = epoch
    ) -> Location {
        let step = Double(index)
        return Location(
            latitude: 52.520_008 + step * 0.000_009,
            longitude: 13.404_954 + step * 0.000_014,
            altitude: 34.2 + (step * 0.1).truncatingRemainder(dividingBy: 3),
            ellipsoidalAltitude: 78.6 + (step * 0.1).truncatingRemainder(dividingBy: 3),
            horizontalAccuracy: accuracy,
            verticalAccuracy: 7.1,
            speed: 1.4 + (step * 0.01).truncatingRemainder(dividingBy: 0.3),
            speedAccuracy: 0.6,
            course: 45.0 + (step * 0.37).truncatingRemainder(dividingBy: 10),
            courseAccuracy: 12.5,
            climb: 0.02,
            timestamp: start.addingTimeInterval(step),
            fixMode: .threeDimensional,
            satellitesUsed: 9 + index % 3,
            source: source)
    }

    /// `count` consecutive walk fixes starting at `from`.
    public static func walk(count: Int, from: Int = 0, accuracy: Double? = 4.5) -> [Location] {
        (from..<(from + count)).map { walk($0, accuracy: accuracy) }
    }

    /// A walk, a stop and a walk on, one fix a second from ``epoch``: `walk` seconds at 1.41 m/s north-east,
    /// `stop` seconds standing with σ `noise` metres of position noise on each axis (accuracy `noise`, at
    /// least 3 m, and a speed under 0.3 m/s), then `walk` seconds on. The noise is fixed by `seed`.
    public static func walkStopWalk(walk: Int, stop: Int, noise: Double, seed: UInt64 = 7) -> [Location] {
        var random = SplitMix64(seed: seed)
        func gaussian() -> Double {
            let u = max(1e-12, Double.random(in: 0..<1, using: &random)), v = Double.random(in: 0..<1, using: &random)
            return (-2 * log(u)).squareRoot() * cos(2 * .pi * v)
        }
        let metresPerDegree = 111_195.0
        var fixes: [Location] = []
        var north = 0.0, east = 0.0
        for second in 0..<(walk + stop + walk) {
            let walking = second < walk || second >= walk + stop
            if walking {
                north += 1.0
                east += 1.0
            }
            var fix = Self.walk(0)
            let noiseNorth = walking ? 0 : gaussian() * noise, noiseEast = walking ? 0 : gaussian() * noise
            fix.latitude += (north + noiseNorth) / metresPerDegree
            fix.longitude += (east + noiseEast) / (metresPerDegree * cos(fix.latitude * .pi / 180))
            fix.timestamp = epoch.addingTimeInterval(Double(second))
            fix.speed = walking ? 1.4 : abs(gaussian()) * 0.1
            fix.horizontalAccuracy = walking ? 4.5 : max(3, noise)
            fixes.append(fix)
        }
        return fixes
    }
}
