import Foundation

/// One line of the table: our value, each peer's value from the same run, and the goal.
struct Figure: Sendable {
    /// The item number (1–7).
    var item: Int
    /// What is measured.
    var name: String
    /// Our value; nil when it could not be measured (see ``note``).
    var ours: Double?
    /// The unit of every value.
    var unit: String
    /// Each peer's value in the same unit, in display order; nil when the peer is not installed or failed.
    var peers: [(name: String, value: Double?)] = []
    /// Whether a larger value is better (rates) or a smaller one (times, memory).
    var higherIsBetter: Bool
    /// The requirements; empty when the figure has no goal.
    var goals: [Goal] = []
    /// How it was measured, or why a value is missing.
    var note: String?

    /// How many times better ours is than `peer` (ours ÷ peer for rates, peer ÷ ours for costs).
    func ratio(to peer: String) -> Double? {
        guard let ours, let value = peers.first(where: { $0.name == peer })?.value, ours > 0, value > 0 else { return nil }
        return higherIsBetter ? ours / value : value / ours
    }

    /// The goals as text; nil without goals.
    var goalText: String? {
        goals.isEmpty ? nil : goals.map { $0.text(unit: unit) }.joined(separator: ", ")
    }

    /// Whether every goal is met; nil without goals or when a value they need is missing.
    var meetsGoal: Bool? {
        guard !goals.isEmpty else { return nil }
        var all = true
        for goal in goals {
            guard let met = goal.isMet(by: self) else { return nil }
            all = all && met
        }
        return all
    }

    /// A value for the table: three significant digits, with k or M for large numbers, and the unit.
    static func format(_ value: Double, unit: String) -> String {
        let magnitude = abs(value)
        let number: String
        if magnitude >= 1e6, unit != "MiB", unit != "B" {
            number = String(format: "%.2f M", value / 1e6)
        } else if magnitude >= 1e4, unit != "MiB", unit != "B" {
            number = String(format: "%.0f k", value / 1e3)
        } else if magnitude >= 100 || value == value.rounded() {
            number = String(format: "%.0f", value)
        } else if magnitude >= 10 {
            number = String(format: "%.1f", value)
        } else if magnitude >= 1 {
            number = String(format: "%.2f", value)
        } else {
            number = String(format: "%.3g", value)
        }
        return unit.isEmpty ? number : "\(number) \(unit)"
    }
}
