import Foundation

/// SplitMix64: a small, fast seeded random number generator that gives the same sequence on every platform
/// for a seed, so that generated inputs are reproducible and a randomised test can print its seed and be
/// repeated exactly.
///
/// ```swift
/// var random = SplitMix64(seed: SplitMix64.seed(fromEnvironment: "MY_TEST_SEED"))
/// let delay = Double.random(in: 0...2, using: &random)
/// ```
public struct SplitMix64: RandomNumberGenerator, Sendable {
    /// The generator's state; the next value derives from it.
    public var state: UInt64

    /// A generator whose sequence is fixed by `seed`.
    public init(seed: UInt64) { state = seed }

    /// A seed from the environment variable `name` (decimal), else a fresh random one.
    public static func seed(
        fromEnvironment name: String, _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> UInt64 {
        environment[name].flatMap { UInt64($0) } ?? UInt64.random(in: 0...UInt64.max)
    }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform value in [0, 1).
    public mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
