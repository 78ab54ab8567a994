import Foundation

/// The typical time between fixes, in constant memory: a histogram of intervals on a log scale
/// (eight buckets per doubling, 1 ms to about 30 years), whose median is within 9 % of the true one.
package struct IntervalHistogram: Sendable, Hashable {
    private static let bucketsPerDoubling = 8.0
    private static let smallest = 0.001
    private var buckets = [Int](repeating: 0, count: 8 * 40)
    /// How many intervals were added.
    package private(set) var count = 0

    /// An empty histogram.
    package init() {}

    /// Adds one interval in seconds; zero, negative and non-finite intervals are not counted.
    package mutating func add(_ seconds: Double) {
        guard seconds.isFinite, seconds > 0 else { return }
        let index = Int((log2(max(seconds, Self.smallest) / Self.smallest) * Self.bucketsPerDoubling).rounded(.down))
        buckets[min(max(index, 0), buckets.count - 1)] += 1
        count += 1
    }

    /// The median interval in seconds (the centre of its bucket), or `nil` when nothing was added.
    package var median: Double? {
        guard count > 0 else { return nil }
        var seen = 0
        for (index, number) in buckets.enumerated() {
            seen += number
            if seen * 2 >= count {
                return Self.smallest * exp2((Double(index) + 0.5) / Self.bucketsPerDoubling)
            }
        }
        return nil
    }
}
