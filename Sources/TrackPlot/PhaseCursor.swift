/// Follows phase changes and held batches through a track, so that both passes give each point the same
/// phase: a batch's points get the background phase they were acquired in, not the foreground they are
/// delivered in.
package struct PhaseCursor: Sendable, Hashable {
    /// The phase of live points now.
    package private(set) var current: PlotPhase = .unknown
    /// The last background phase seen (suspended or background): when held points were acquired.
    private var lastBackground: PlotPhase = .suspended
    /// Points of the current batch still to come.
    package private(set) var heldRemaining = 0

    /// Starts with no known phase.
    package init() {}

    /// Takes in a phase change or a batch.
    package mutating func add(_ item: PlotItem) {
        switch item {
        case .phase(let phase):
            current = phase
            if phase == .background || phase == .suspended { lastBackground = phase }
        case .batch(let count):
            heldRemaining = max(0, count)
        default:
            break
        }
    }

    /// Whether the next point is part of a held batch.
    package var nextIsHeld: Bool { heldRemaining > 0 }

    /// The phase of the next point, counting it off the batch when it is held.
    package mutating func phaseOfNextPoint() -> PlotPhase {
        if heldRemaining > 0 {
            heldRemaining -= 1
            return lastBackground
        }
        return current
    }
}
