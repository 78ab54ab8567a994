/// A small seeded random number generator (SplitMix64), so that a randomised test can print its seed and be
/// repeated exactly.
///
/// ```swift
/// var random = SeededGenerator(seed: 42)
/// let delay = Double.random(in: 0...2, using: &random)
/// ```
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator whose sequence is fixed by `seed`.
    public init(seed: UInt64) {
        state = seed
    }

    /// A seed from the environment variable `name` (decimal), else a fresh random one.
    public static func seed(fromEnvironment name: String, _ environment: [String: String]) -> UInt64 {
        environment[name].flatMap { UInt64($0) } ?? UInt64.random(in: 0...UInt64.max)
    }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
