/// Picks the fix an acquisition ends with: the first that meets the desired accuracy, else the best seen.
///
/// "Best" is the smallest horizontal accuracy; a fix without one ranks below any fix with one, and among
/// equals the later fix wins (it is fresher).
public struct AcquisitionSelector: Sendable {
    /// The accuracy, in metres, that ends the acquisition at once; `nil` accepts the first fix.
    public let desiredAccuracy: Double?
    /// The best fix offered so far.
    public private(set) var best: Location?
    /// Whether a fix meeting ``desiredAccuracy`` has been offered.
    public private(set) var isSatisfied = false
    /// How many fixes were offered.
    public private(set) var offered = 0

    /// Creates a selector for the given accuracy goal.
    public init(desiredAccuracy: Double?) {
        self.desiredAccuracy = desiredAccuracy
    }

    /// Offers a fix; returns `true` when the acquisition may end (this fix meets the goal).
    @discardableResult
    public mutating func offer(_ location: Location) -> Bool {
        offered += 1
        if isSatisfied { return true }
        if let current = best {
            if Self.rank(location) <= Self.rank(current) { best = location }
        } else {
            best = location
        }
        if Self.meets(location, desiredAccuracy) {
            best = location
            isSatisfied = true
        }
        return isSatisfied
    }

    /// Whether a fix's horizontal accuracy is at most `desiredAccuracy` (always true when that is `nil`).
    public static func meets(_ location: Location, _ desiredAccuracy: Double?) -> Bool {
        guard let desiredAccuracy else { return true }
        guard let accuracy = location.horizontalAccuracy else { return false }
        return accuracy <= desiredAccuracy
    }

    private static func rank(_ location: Location) -> Double {
        location.horizontalAccuracy ?? .infinity
    }
}
