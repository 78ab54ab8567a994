import Foundation
import TrackPlot

/// Tracks and helpers shared by the plot tests.
enum PlotFixtures {
    /// Renders items to SVG text in memory.
    static func svg(_ items: [PlotItem], name: String = "test.gpx", width: Double = 1000, height: Double = 750) throws -> String {
        var bytes: [UInt8] = []
        try TrackPlotter.render(
            name: name, width: width, height: height, items: { visit in for item in items { try visit(item) } },
            write: { bytes.append(contentsOf: $0) })
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A timed point, one second apart by default.
    static func point(_ latitude: Double, _ longitude: Double, _ time: Double, accuracy: Double? = nil) -> PlotItem {
        .point(PlotPoint(latitude: latitude, longitude: longitude, time: time, horizontalAccuracy: accuracy))
    }

    /// How many times `needle` occurs in `text`.
    static func count(_ needle: String, in text: String) -> Int {
        text.components(separatedBy: needle).count - 1
    }

    /// The summary of items, as the first pass makes it.
    static func summary(_ items: [PlotItem]) -> TrackSummary {
        var summary = TrackSummary()
        for item in items { summary.add(item) }
        return summary
    }
}
