import Foundation
import FoundationXML
import Testing
import TrackPlot

@Suite struct TrackPlotterTests {
    private final class ParseCheck: NSObject, XMLParserDelegate {}

    /// Parses the SVG as XML: a browser shows nothing for a malformed document.
    private func isWellFormed(_ svg: String) -> Bool {
        let parser = XMLParser(data: Data(svg.utf8))
        let delegate = ParseCheck()
        parser.delegate = delegate
        return parser.parse()
    }

    @Test func aTrackWithoutPointsIsRefusedWithAMessage() {
        #expect(throws: PlotError(.noPoints, "empty.jsonl holds no positions to plot")) {
            try PlotFixtures.svg([.phase(.foreground)], name: "empty.jsonl")
        }
    }

    @Test func aPictureSizeOutOfRangeIsRefused() {
        let error = #expect(throws: PlotError.self) { try PlotFixtures.svg([PlotFixtures.point(0, 0, 0)], width: 10) }
        #expect(error?.code == .invalidOption, "\(String(describing: error))")
        #expect(error?.message == "the picture must be 200…20000 pixels on each side")
    }

    @Test func onePointMakesAWellFormedPictureWithTitleLegendScaleAndNorth() throws {
        let svg = try PlotFixtures.svg([PlotFixtures.point(47, 8, 0)], name: "one <&> point.gpx")
        #expect(isWellFormed(svg))
        #expect(svg.contains("one &lt;&amp;&gt; point.gpx"))
        #expect(svg.contains("1 point ·"))
        #expect(svg.contains(">N</text>"))
        #expect(svg.contains(">start</text>"))
        #expect(svg.contains(" m</text>"), "scale bar label")
    }

    @Test func phasesColourTheLineAndAPhaseChangeContinuesItFromTheLastPoint() throws {
        var items: [PlotItem] = [.phase(.foreground)]
        items += (0..<5).map { PlotFixtures.point(0, Double($0) * 0.001, Double($0)) }
        items.append(.phase(.background))
        items += (5..<10).map { PlotFixtures.point(0, Double($0) * 0.001, Double($0)) }
        let svg = try PlotFixtures.svg(items)
        #expect(isWellFormed(svg))
        #expect(PlotFixtures.count("<polyline class=\"fg\"", in: svg) == 1)
        #expect(PlotFixtures.count("<polyline class=\"bg\"", in: svg) == 1)
        #expect(svg.contains(">foreground</text>") && svg.contains(">background</text>"))
        #expect(!svg.contains(">suspended (held)</text>"))
    }

    @Test func aHeldBatchIsRingedWhereAcquiredAndMarkedWhereDelivered() throws {
        var items: [PlotItem] = [.phase(.foreground), PlotFixtures.point(0, 0, 0), .phase(.suspended), .phase(.foreground), .batch(count: 3)]
        items += (1...3).map { PlotFixtures.point(0, Double($0) * 0.001, Double($0)) }
        items.append(PlotFixtures.point(0, 0.004, 4))
        let svg = try PlotFixtures.svg(items)
        #expect(isWellFormed(svg))
        #expect(PlotFixtures.count("<circle class=\"held\"", in: svg) == 3 + 1, "three held points and the legend")
        #expect(PlotFixtures.count("<path class=\"dlv\"", in: svg) == 2, "one delivery and the legend")
        #expect(svg.contains("<polyline class=\"su\""))
    }

    @Test func aBatchDeliveredAtTheEndIsMarkedAtTheLastPoint() throws {
        let items: [PlotItem] = [.phase(.suspended), .batch(count: 2), PlotFixtures.point(0, 0, 0), PlotFixtures.point(0, 0.001, 1)]
        let svg = try PlotFixtures.svg(items)
        #expect(PlotFixtures.count("<path class=\"dlv\"", in: svg) == 2)
    }

    @Test func aTimeGapBreaksTheLineAndIsLabelled() throws {
        var items = (0..<20).map { PlotFixtures.point(0, Double($0) * 0.0001, Double($0)) }
        items += (20..<40).map { PlotFixtures.point(0, Double($0) * 0.0001, 3600 + Double($0)) }
        let svg = try PlotFixtures.svg(items)
        #expect(PlotFixtures.count("<polyline", in: svg) == 2)
        #expect(svg.contains("<path class=\"gap\" d=\"M"))
        #expect(svg.contains(">gap 1 h</text>"))
        #expect(svg.contains("time gap (1)"))
    }

    @Test func aLostFixBreaksTheLineAndIsCrossed() throws {
        var items = (0..<5).map { PlotFixtures.point(0, Double($0) * 0.0001, Double($0)) }
        items.append(.fixLoss(reason: "no fix"))
        items.append(.fixLoss(reason: "no fix again"))
        items += (5..<10).map { PlotFixtures.point(0, Double($0) * 0.0001, Double($0)) }
        let svg = try PlotFixtures.svg(items)
        #expect(PlotFixtures.count("<polyline", in: svg) == 2)
        // One connector, one cross (two losses in a row are one), and the legend's of each.
        #expect(PlotFixtures.count("<path class=\"loss\" d=\"M", in: svg) == 2)
        #expect(PlotFixtures.count("<path class=\"x\" d=\"M", in: svg) == 2)
        #expect(svg.contains("fix lost (1)"))
    }

    @Test func accuracyIsDrawnUnderTheLineOnlyWhereKnown() throws {
        let known = try PlotFixtures.svg([PlotFixtures.point(0, 0, 0, accuracy: 5), PlotFixtures.point(0, 0.0005, 1)])
        #expect(known.contains("<use href=\"#accuracy\""))
        #expect(known.range(of: "<use href")!.lowerBound < known.range(of: "<g id=\"track\"")!.lowerBound)
        #expect(PlotFixtures.count("<circle cx=", in: known.components(separatedBy: "<g id=\"accuracy\"").last!) >= 1)
        let unknown = try PlotFixtures.svg([PlotFixtures.point(0, 0, 0), PlotFixtures.point(0, 0.0005, 1)])
        #expect(!unknown.contains("accuracy"))
    }

    @Test func aMillionPointsMakeASmallPicture() throws {
        var size = 0
        let summary = try TrackPlotter.render(
            name: "million",
            items: { visit in
                try visit(.phase(.foreground))
                for index in 0..<1_000_000 {
                    let angle = Double(index) / 1_000_000 * 2 * .pi * 5
                    let radius = 0.01 + 0.003 * sin(Double(index) * 0.00003)
                    try visit(PlotFixtures.point(47 + radius * sin(angle), 8 + radius * 1.5 * cos(angle), Double(index), accuracy: 4))
                }
            },
            write: { size += $0.count })
        #expect(summary.pointCount == 1_000_000)
        #expect(size < 1_500_000, "the SVG is \(size) bytes")
    }
}
