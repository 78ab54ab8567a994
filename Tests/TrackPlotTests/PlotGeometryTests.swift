import Foundation
import Testing
import TrackPlot

@Suite struct PlotGeometryTests {
    @Test func aTrackAcrossTheAntimeridianIsDrawnAsAShortStepNotAcrossTheGlobe() {
        let items = [PlotFixtures.point(10, 179.999, 0), PlotFixtures.point(10, -179.999, 1)]
        let summary = PlotFixtures.summary(items)
        #expect(summary.maxLongitude - summary.minLongitude < 0.01)
        #expect(summary.distance < 300)
        let frame = PlotFrame(summary: summary, width: 1000, height: 750)
        let a = frame.pixel(latitude: 10, unwrappedLongitude: 179.999)
        let b = frame.pixel(latitude: 10, unwrappedLongitude: 180.001)
        #expect(b.x > a.x, "east stays east")
        #expect(a.x >= frame.plotLeft && b.x <= frame.plotLeft + frame.plotWidth)
    }

    @Test func pointsAtThePolesGiveFinitePixels() throws {
        let svg = try PlotFixtures.svg([PlotFixtures.point(90, 0, 0), PlotFixtures.point(90, 120, 1), PlotFixtures.point(89.9999, -60, 2)])
        #expect(!svg.contains("nan") && !svg.contains("inf"))
        let south = try PlotFixtures.svg([PlotFixtures.point(-90, 0, 0), PlotFixtures.point(-89.99, 0, 1)])
        #expect(south.contains("<polyline"))
    }

    @Test func identicalPointsAreDrawnAtTheCentreWithTheSmallestScale() {
        let items = (0..<50).map { PlotFixtures.point(47.5, 7.5, Double($0)) }
        let frame = PlotFrame(summary: PlotFixtures.summary(items), width: 1000, height: 750)
        let pixel = frame.pixel(latitude: 47.5, unwrappedLongitude: 7.5)
        #expect(abs(pixel.x - (frame.plotLeft + frame.plotWidth / 2)) < 0.001)
        #expect(abs(pixel.y - (frame.plotTop + frame.plotHeight / 2)) < 0.001)
        #expect(frame.scale * PlotFrame.minimumExtent <= frame.plotHeight)
    }

    @Test func theScaleBarIsARoundLengthAboutAFifthOfThePlot() {
        let items = [PlotFixtures.point(0, 0, 0), PlotFixtures.point(0, 0.1, 1)]
        let frame = PlotFrame(summary: PlotFixtures.summary(items), width: 1000, height: 750)
        let bar = frame.scaleBar
        let mantissa = bar.metres / pow(10, log10(bar.metres).rounded(.down))
        #expect([1.0, 2, 5].contains { abs($0 - mantissa) < 1e-9 })
        #expect(bar.pixels <= frame.plotWidth / 5 + 0.001 && bar.pixels > frame.plotWidth / 5 / 2.5)
        #expect(PlotFrame.lengthText(2000) == "2 km")
        #expect(PlotFrame.lengthText(500) == "500 m")
    }

    @Test func theMedianIntervalIsWithinTenPercent() {
        var histogram = IntervalHistogram()
        for _ in 0..<900 { histogram.add(1.0) }
        for _ in 0..<100 { histogram.add(600) }
        histogram.add(.nan)
        histogram.add(-3)
        let median = try! #require(histogram.median)
        #expect(abs(median - 1) < 0.1)
        #expect(histogram.count == 1000)
    }

    @Test func heldPointsTakeTheBackgroundPhaseTheyWereAcquiredIn() {
        var cursor = PhaseCursor()
        cursor.add(.phase(.foreground))
        cursor.add(.phase(.suspended))
        cursor.add(.phase(.foreground))
        cursor.add(.batch(count: 2))
        #expect(cursor.phaseOfNextPoint() == .suspended)
        #expect(cursor.phaseOfNextPoint() == .suspended)
        #expect(cursor.phaseOfNextPoint() == .foreground)
    }
}
