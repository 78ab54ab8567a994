import Foundation

/// Draws a track as an SVG picture in two streaming passes over its items: the first measures it
/// (``TrackSummary``), the second draws it, so memory stays bounded whatever the number of points.
///
/// The line is coloured by lifecycle phase and thinned to what can be seen (``PathDecimator``); held
/// batches are marked where their fixes were acquired and where they were delivered; accuracy is a
/// translucent circle; a time gap well above the phase's typical interval and a lost fix break the line
/// and are marked. A title, a legend, a scale bar and a north arrow go around it.
package enum TrackPlotter {
    /// The picture sizes accepted, in pixels on each side.
    package static let sizeRange = 200.0...20000.0

    /// Reads the track twice through `items` and writes the SVG through `write`, in pieces of about 64 KiB.
    ///
    /// - Parameters:
    ///   - name: the file name shown in the title.
    ///   - width: the picture's width in pixels.
    ///   - height: the picture's height in pixels.
    ///   - items: calls its argument with every item of the track, in order; it is called twice and must
    ///     give the same items both times.
    ///   - write: receives the SVG text.
    /// - Returns: the summary of the track.
    /// - Throws: ``PlotError`` when there is nothing to draw or a size is out of range, or what `items` or
    ///   `write` throw.
    @discardableResult
    package static func render(
        name: String, width: Double = 1000, height: Double = 750,
        items: (_ visit: (PlotItem) throws -> Void) throws -> Void,
        write: ([UInt8]) throws -> Void
    ) throws -> TrackSummary {
        guard sizeRange.contains(width), sizeRange.contains(height) else {
            throw PlotError(.invalidOption, "the picture must be \(Int(sizeRange.lowerBound))…\(Int(sizeRange.upperBound)) pixels on each side")
        }
        var summary = TrackSummary()
        try items { summary.add($0) }
        guard summary.pointCount > 0 else { throw PlotError(.noPoints, "\(name) holds no positions to plot") }
        let frame = PlotFrame(summary: summary, width: width, height: height)
        var drawing = TrackDrawing(name: name, summary: summary, frame: frame)
        drawing.begin()
        try withoutActuallyEscaping(write) { write in
            try items { item in
                drawing.add(item)
                if drawing.output.count >= 1 << 16 {
                    try write(drawing.output)
                    drawing.output.removeAll(keepingCapacity: true)
                }
            }
        }
        drawing.end()
        try write(drawing.output)
        return summary
    }
}
