/// One thing a track file says, in file order: what the renderer reads in each of its passes.
package enum PlotItem: Sendable, Hashable {
    /// A delivered (or recorded) position.
    case point(PlotPoint)
    /// The lifecycle phase changed; later points belong to it.
    case phase(PlotPhase)
    /// The next `count` points are one held batch, delivered now.
    case batch(count: Int)
    /// The fix was lost (an error, or the receiver reports no fix); the line breaks until the next point.
    case fixLoss(reason: String)
}
