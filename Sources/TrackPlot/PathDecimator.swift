/// Thins a polyline in pixels without changing its shape: a point closer than `radial` pixels to the last
/// kept one is dropped, and what remains is simplified by Douglas–Peucker with `tolerance` pixels on windows
/// of at most `window` points. Memory is bounded by the window whatever the length of the line; the ends of
/// each window are kept, so a window boundary never moves the line.
package struct PathDecimator: Sendable {
    /// A pixel position.
    package typealias Pixel = (x: Double, y: Double)

    private let radial: Double, tolerance: Double, window: Int
    private var pending: [Pixel] = []
    private var lastAccepted: Pixel?

    /// A decimator for one polyline.
    package init(radial: Double = 0.7, tolerance: Double = 0.45, window: Int = 2048) {
        self.radial = radial
        self.tolerance = tolerance
        self.window = max(3, window)
        pending.reserveCapacity(self.window)
    }

    /// Adds the next point; `emit` receives the points that are certain to be kept, in order.
    package mutating func add(_ pixel: Pixel, emit: (Pixel) throws -> Void) rethrows {
        if let last = lastAccepted {
            let dx = pixel.x - last.x, dy = pixel.y - last.y
            if dx * dx + dy * dy < radial * radial {
                // Kept as the provisional end, so the line still reaches the last point.
                latest = pixel
                return
            }
        }
        // A farther point supersedes the one that was too close.
        latest = nil
        lastAccepted = pixel
        pending.append(pixel)
        if pending.count >= window { try flushWindow(final: false, emit: emit) }
    }

    /// The last point when it was too close to be accepted: it still ends the line.
    private var latest: Pixel?

    /// Ends the polyline, emitting what is left.
    package mutating func finish(emit: (Pixel) throws -> Void) rethrows {
        if let held = latest {
            latest = nil
            pending.append(held)
        }
        try flushWindow(final: true, emit: emit)
        lastAccepted = nil
    }

    private mutating func flushWindow(final: Bool, emit: (Pixel) throws -> Void) rethrows {
        guard !pending.isEmpty else { return }
        var keep = [Bool](repeating: false, count: pending.count)
        keep[0] = true
        keep[pending.count - 1] = true
        Self.simplify(pending, 0, pending.count - 1, tolerance, &keep)
        // The last point starts the next window (not emitted twice).
        let end = final ? pending.count : pending.count - 1
        for index in 0..<end where keep[index] { try emit(pending[index]) }
        if final {
            pending.removeAll(keepingCapacity: true)
        } else {
            let last = pending[pending.count - 1]
            pending.removeAll(keepingCapacity: true)
            pending.append(last)
        }
    }

    /// Douglas–Peucker, with an explicit stack so a long window cannot overflow the call stack.
    private static func simplify(_ points: [Pixel], _ first: Int, _ last: Int, _ tolerance: Double, _ keep: inout [Bool]) {
        var stack = [(first, last)]
        while let (start, end) = stack.popLast() {
            guard end > start + 1 else { continue }
            let a = points[start], b = points[end]
            let dx = b.x - a.x, dy = b.y - a.y
            let squaredLength = dx * dx + dy * dy
            var farthest = start, distance = -1.0
            for index in (start + 1)..<end {
                let p = points[index]
                // Distance to the segment, not to its line: a track that turns back on itself along the same
                // line (out and back) keeps its turning point.
                let t = squaredLength > 0 ? min(1, max(0, ((p.x - a.x) * dx + (p.y - a.y) * dy) / squaredLength)) : 0
                let ex = p.x - (a.x + t * dx), ey = p.y - (a.y + t * dy)
                let d = (ex * ex + ey * ey).squareRoot()
                if d > distance { (farthest, distance) = (index, d) }
            }
            if distance > tolerance {
                keep[farthest] = true
                stack.append((start, farthest))
                stack.append((farthest, end))
            }
        }
    }
}
