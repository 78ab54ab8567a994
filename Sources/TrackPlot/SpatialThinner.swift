/// Lets through at most one mark per cell of a pixel grid, so that the marks on a picture (dots, accuracy
/// circles, held points) stay few and readable however many points fall on the same place. Memory is one
/// bit per cell.
package struct SpatialThinner: Sendable {
    private let cell: Double, columns: Int, rows: Int
    private var taken: [UInt64]

    /// A grid of `cell`-pixel squares over a `width` × `height` picture.
    package init(width: Double, height: Double, cell: Double) {
        self.cell = max(cell, 0.5)
        columns = max(1, Int((width / self.cell).rounded(.up)) + 1)
        rows = max(1, Int((height / self.cell).rounded(.up)) + 1)
        taken = [UInt64](repeating: 0, count: (columns * rows + 63) / 64)
    }

    /// Whether a mark at this pixel is the first in its cell (and takes the cell); off the picture, false.
    package mutating func admit(x: Double, y: Double) -> Bool {
        guard x.isFinite, y.isFinite, x >= 0, y >= 0 else { return false }
        let column = Int(x / cell), row = Int(y / cell)
        guard column < columns, row < rows else { return false }
        let index = row * columns + column
        let bit = UInt64(1) << UInt64(index % 64)
        if taken[index / 64] & bit != 0 { return false }
        taken[index / 64] |= bit
        return true
    }
}
