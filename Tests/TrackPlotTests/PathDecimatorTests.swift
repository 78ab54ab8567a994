import Foundation
import Testing
import TrackPlot

@Suite struct PathDecimatorTests {
    private func decimate(_ pixels: [PathDecimator.Pixel], window: Int = 2048) -> [PathDecimator.Pixel] {
        var decimator = PathDecimator(window: window)
        var kept: [PathDecimator.Pixel] = []
        for pixel in pixels { decimator.add(pixel) { kept.append($0) } }
        decimator.finish { kept.append($0) }
        return kept
    }

    @Test func aStraightLineOfManyPointsKeepsOnlyItsEnds() {
        let line: [PathDecimator.Pixel] = (0...10_000).map { index -> PathDecimator.Pixel in (x: Double(index) * 0.05, y: Double(index) * 0.02) }
        let kept = decimate(line)
        #expect(kept.count == 2)
        #expect(kept.first! == line.first!)
        #expect(kept.last! == line.last!)
    }

    @Test func theCornersOfADenseSquareAreKeptAcrossWindowBoundaries() {
        // 400 points per side, windows of 100: corners fall inside windows and on their edges.
        var square: [PathDecimator.Pixel] = []
        let corners: [PathDecimator.Pixel] = [(100, 100), (100, 300), (300, 300), (300, 100), (100, 100)]
        for side in 0..<4 {
            let (a, b) = (corners[side], corners[side + 1])
            for step in 0..<400 {
                let t = Double(step) / 400
                square.append((a.x + (b.x - a.x) * t, a.y + (b.y - a.y) * t))
            }
        }
        square.append(corners[4])
        let kept = decimate(square, window: 100)
        for corner in corners {
            #expect(kept.contains { abs($0.x - corner.x) < 0.01 && abs($0.y - corner.y) < 0.01 }, "corner \(corner) lost")
        }
        #expect(kept.count < 40)
    }

    @Test func noKeptPointIsFartherThanTheToleranceFromTheOriginalLine() {
        // A sine wave of 20 px amplitude sampled every 0.1 px: the thinned line must follow it.
        let wave: [PathDecimator.Pixel] = (0..<6000).map { index -> PathDecimator.Pixel in
            let step = Double(index)
            let y: Double = 200 + 20 * sin(step * 0.01)
            return (x: step * 0.1, y: y)
        }
        let kept = decimate(wave, window: 512)
        #expect(kept.count < 300)
        // Every original point lies within a pixel of the thinned polyline.
        for (index, original) in wave.enumerated() where index % 7 == 0 {
            let segment = zip(kept, kept.dropFirst()).first { $0.x <= original.x && original.x <= $1.x }!
            let t = segment.1.x == segment.0.x ? 0 : (original.x - segment.0.x) / (segment.1.x - segment.0.x)
            let y = segment.0.y + (segment.1.y - segment.0.y) * t
            #expect(abs(y - original.y) < 1.0, "point \(index) is \(abs(y - original.y)) px off")
        }
    }

    @Test func anOutAndBackLineKeepsItsTurningPoint() {
        // Out to x = 300 and back to x = 100 along the same row: every point is on the line from start to end.
        let out: [PathDecimator.Pixel] = (0...300).map { (x: Double($0), y: 50) }
        let back: [PathDecimator.Pixel] = (100..<300).reversed().map { (x: Double($0), y: 50) }
        let kept = decimate(out + back)
        #expect(kept.contains { $0.x == 300 }, "the turning point is gone: \(kept)")
        #expect(kept.count == 3)
    }

    @Test func aPointTooCloseToTheLastStillEndsTheLine() {
        let kept = decimate([(0, 0), (10, 0), (10.1, 0)])
        #expect(kept.last! == (10.1, 0))
    }
}

