/// One requirement a figure must meet.
enum Goal: Sendable {
    /// Our value is at least this.
    case atLeast(Double)
    /// Our value is at most this.
    case atMost(Double)
    /// Our value is at least this many times better than the named peer's.
    case timesBetterThan(String, Double)

    /// Whether `figure` meets this requirement; nil when a value it needs is missing.
    func isMet(by figure: Figure) -> Bool? {
        guard let ours = figure.ours else { return nil }
        switch self {
        case .atLeast(let bound): return ours >= bound
        case .atMost(let bound): return ours <= bound
        case .timesBetterThan(let peer, let factor):
            guard let ratio = figure.ratio(to: peer) else { return nil }
            return ratio >= factor
        }
    }

    /// The requirement as text, in the figure's unit.
    func text(unit: String) -> String {
        switch self {
        case .atLeast(let bound): return "≥ \(Figure.format(bound, unit: unit))"
        case .atMost(let bound): return "≤ \(Figure.format(bound, unit: unit))"
        case .timesBetterThan(let peer, let factor): return "≥ \(Figure.format(factor, unit: ""))× \(peer)"
        }
    }
}
