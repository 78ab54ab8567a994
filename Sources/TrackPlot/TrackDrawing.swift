import Foundation

/// The second pass: turns the items of a track into SVG text, given the first pass's summary and frame.
/// ``output`` grows as items come in; the caller writes it out and empties it.
struct TrackDrawing {
    /// SVG text not written yet.
    var output: [UInt8] = []

    private let name: String
    private let summary: TrackSummary
    private let frame: PlotFrame
    /// Whether every point gets a dot (a short track), rather than only the line.
    private let dotsEveryPoint: Bool

    private var cursor = PhaseCursor()
    private var unwrapper = LongitudeUnwrapper()
    private var previous: (point: PlotPoint, pixel: PathDecimator.Pixel)?
    private var run: Run?
    private var decimator = PathDecimator()
    private var fixLost = false
    /// A batch whose points have all been seen: its size, marked at the next point (its delivery).
    private var awaitingDelivery: Int?
    private var heldInBatch = 0

    private var accuracyThinner: SpatialThinner
    private var heldThinner: SpatialThinner
    /// Labels (gap lengths, deliveries) need room: one per 90-pixel cell, so they never pile up.
    private var labelThinner: SpatialThinner
    private var accuracy: [UInt8] = []
    private var marks: [UInt8] = []
    private var dots: [UInt8] = []
    private var counts = MarkCounts()

    /// The polyline being drawn: one phase, no gap.
    private struct Run {
        var phase: PlotPhase
        var emitted = 0
        var first: PathDecimator.Pixel?
    }

    private struct MarkCounts {
        var gaps = 0, fixLosses = 0, deliveries = 0, held = 0, undrawn = 0
    }

    /// Marks of one kind beyond this many are counted, not drawn, so that a pathological file stays small.
    private static let markLimit = 2000

    init(name: String, summary: TrackSummary, frame: PlotFrame) {
        self.name = name
        self.summary = summary
        self.frame = frame
        dotsEveryPoint = summary.pointCount <= 2000
        accuracyThinner = SpatialThinner(width: frame.width, height: frame.height, cell: 8)
        heldThinner = SpatialThinner(width: frame.width, height: frame.height, cell: 8)
        labelThinner = SpatialThinner(width: frame.width, height: frame.height, cell: 90)
        output.reserveCapacity(1 << 17)
    }

    private mutating func text(_ string: String) { output.append(contentsOf: string.utf8) }

    /// The document's head: size, styles, background, and the accuracy layer (defined at the end).
    mutating func begin() {
        let w = SVGText.number(frame.width), h = SVGText.number(frame.height)
        var style = ""
        for phase in PlotPhase.allCases {
            style += ".\(phase.cssClass){fill:none;stroke:\(phase.colour);stroke-width:1.8;stroke-linejoin:round;stroke-linecap:round}"
            style += ".d\(phase.cssClass){fill:\(phase.colour)}"
        }
        style += ".acc{fill:#1f5fbf;fill-opacity:.07;stroke:#1f5fbf;stroke-opacity:.22;stroke-width:.6}"
        style += ".gap{fill:none;stroke:#777;stroke-width:1.2;stroke-dasharray:4 3}"
        style += ".loss{fill:none;stroke:#c62828;stroke-width:1.2;stroke-dasharray:2 3}"
        style += ".x{fill:none;stroke:#c62828;stroke-width:2}"
        style += ".held{fill:#fff;stroke:#8e3bb3;stroke-width:1.2}"
        style += ".dlv{fill:#ffd54f;stroke:#5d4037;stroke-width:1.2}"
        style += "text{font-family:DejaVu Sans,Verdana,sans-serif;fill:#222}"
        text("""
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="\(w)" height="\(h)" viewBox="0 0 \(w) \(h)">
            <title>\(SVGText.escaped(name))</title>
            <style>\(style)</style>
            <rect width="\(w)" height="\(h)" fill="#fff"/>
            <rect x="\(SVGText.number(frame.plotLeft))" y="\(SVGText.number(frame.plotTop))" width="\(SVGText.number(frame.plotWidth))" height="\(SVGText.number(frame.plotHeight))" fill="#f7f7f4" stroke="#ccc"/>

            """)
        // Accuracy circles lie under the line but are only known while it is drawn: they are defined at the
        // end and shown here.
        if summary.hasAccuracy {
            // Kept inside the plot area: a wide circle at the edge would cover the title or the legend.
            text("""
                <clipPath id="plot"><rect x="\(SVGText.number(frame.plotLeft))" y="\(SVGText.number(frame.plotTop))" width="\(SVGText.number(frame.plotWidth))" height="\(SVGText.number(frame.plotHeight))"/></clipPath>
                <use href="#accuracy" xlink:href="#accuracy" clip-path="url(#plot)"/>

                """)
        }
        text("<g id=\"track\">\n")
    }

    /// Takes in the next item.
    mutating func add(_ item: PlotItem) {
        switch item {
        case .phase, .batch:
            cursor.add(item)
            if case .batch(let count) = item, count > 0 {
                // A batch delivered with nothing live after the last one: mark that one where it is.
                deliverPending(at: previous?.pixel)
                heldInBatch = count
            }
        case .fixLoss:
            guard let previous, !fixLost else { return }
            fixLost = true
            endRun()
            counts.fixLosses += 1
            if counts.fixLosses <= Self.markLimit {
                let (x, y) = previous.pixel
                mark("<path class=\"x\" d=\"M\(SVGText.number(x - 4)) \(SVGText.number(y - 4))l8 8m0 -8l-8 8\"/>")
            } else { counts.undrawn += 1 }
        case .point(let point):
            addPoint(point)
        }
    }

    private mutating func addPoint(_ point: PlotPoint) {
        let held = cursor.nextIsHeld
        let phase = cursor.phaseOfNextPoint()
        let longitude = unwrapper.unwrap(point.longitude)
        let pixel = frame.pixel(latitude: point.latitude, unwrappedLongitude: longitude)
        if !held { deliverPending(at: pixel) }

        if let previous {
            if fixLost {
                connector("loss", from: previous.pixel, to: pixel, label: nil)
                startRun(phase, at: pixel)
            } else if let gap = gapSeconds(from: previous.point, to: point, phase: phase) {
                counts.gaps += 1
                connector("gap", from: previous.pixel, to: pixel, label: "gap " + Self.durationText(gap))
                startRun(phase, at: pixel)
            } else if run?.phase != phase {
                // A phase change continues the line in the new colour from the last point.
                endRun()
                startRun(phase, at: previous.pixel)
                extendRun(pixel)
            } else {
                extendRun(pixel)
            }
        } else {
            firstPixel = pixel
            startRun(phase, at: pixel)
        }
        fixLost = false
        previous = (point, pixel)

        if dotsEveryPoint {
            dots.append(contentsOf: "<circle class=\"d\(phase.cssClass)\" cx=\"".utf8)
            SVGText.appendNumber(pixel.x, to: &dots)
            dots.append(contentsOf: "\" cy=\"".utf8)
            SVGText.appendNumber(pixel.y, to: &dots)
            dots.append(contentsOf: "\" r=\"2.2\"/>\n".utf8)
        }
        if held {
            heldInBatch -= 1
            if heldInBatch == 0 { awaitingDelivery = (awaitingDelivery ?? 0) + 1 }
            counts.held += 1
            if dotsEveryPoint || heldThinner.admit(x: pixel.x, y: pixel.y) {
                mark("<circle class=\"held\" cx=\"\(SVGText.number(pixel.x))\" cy=\"\(SVGText.number(pixel.y))\" r=\"3.2\"/>")
            }
        }
        if let metres = point.horizontalAccuracy {
            let radius = metres * frame.scale
            if radius >= 0.5, accuracyThinner.admit(x: pixel.x, y: pixel.y) {
                accuracy.append(contentsOf: "<circle cx=\"".utf8)
                SVGText.appendNumber(pixel.x, to: &accuracy)
                accuracy.append(contentsOf: "\" cy=\"".utf8)
                SVGText.appendNumber(pixel.y, to: &accuracy)
                accuracy.append(contentsOf: "\" r=\"".utf8)
                SVGText.appendNumber(min(radius, 4 * max(frame.width, frame.height)), to: &accuracy)
                accuracy.append(contentsOf: "\"/>\n".utf8)
            }
        }
    }

    /// Marks the delivery of batches whose points have all been seen, at `pixel`.
    private mutating func deliverPending(at pixel: PathDecimator.Pixel?) {
        guard let batches = awaitingDelivery, let pixel else { return }
        awaitingDelivery = nil
        counts.deliveries += batches
        guard counts.deliveries <= Self.markLimit else {
            counts.undrawn += 1
            return
        }
        let (x, y) = pixel
        mark("<path class=\"dlv\" d=\"M\(SVGText.number(x)) \(SVGText.number(y - 7))l7 7l-7 7l-7 -7z\"/>")
        if labelThinner.admit(x: x, y: y) {
            mark("<text x=\"\(SVGText.number(x + 9))\" y=\"\(SVGText.number(y - 6))\" font-size=\"11\">batch delivered</text>")
        }
    }

    /// The length of a time gap between two points, when it is well above the typical interval of the phase (ten times, and at least 30 s more).
    private func gapSeconds(from before: PlotPoint, to after: PlotPoint, phase: PlotPhase) -> Double? {
        guard let start = before.time, let end = after.time,
            let typical = summary.typicalInterval(phase) ?? summary.typicalInterval(.unknown)
        else { return nil }
        let interval = end - start
        return interval > max(typical * 10, typical + 30) ? interval : nil
    }

    private mutating func connector(_ kind: String, from start: PathDecimator.Pixel, to end: PathDecimator.Pixel, label: String?) {
        endRun()
        guard counts.gaps + counts.fixLosses <= 4 * Self.markLimit else {
            counts.undrawn += 1
            return
        }
        mark("<path class=\"\(kind)\" d=\"M\(SVGText.number(start.x)) \(SVGText.number(start.y))L\(SVGText.number(end.x)) \(SVGText.number(end.y))\"/>")
        let x = (start.x + end.x) / 2 + 4, y = (start.y + end.y) / 2 - 4
        if let label, labelThinner.admit(x: x, y: y) {
            mark("<text x=\"\(SVGText.number(x))\" y=\"\(SVGText.number(y))\" font-size=\"10\" fill=\"#555\">\(label)</text>")
        }
    }

    private mutating func mark(_ element: String) {
        marks.append(contentsOf: element.utf8)
        marks.append(0x0A)
    }

    private mutating func startRun(_ phase: PlotPhase, at pixel: PathDecimator.Pixel) {
        endRun()
        run = Run(phase: phase)
        decimator = PathDecimator()
        extendRun(pixel)
    }

    private mutating func extendRun(_ pixel: PathDecimator.Pixel) {
        guard run != nil else { return }
        var kept: [PathDecimator.Pixel] = []
        decimator.add(pixel) { kept.append($0) }
        for pixel in kept { emit(pixel) }
    }

    private mutating func endRun() {
        guard run != nil else { return }
        var kept: [PathDecimator.Pixel] = []
        decimator.finish { kept.append($0) }
        for pixel in kept { emit(pixel) }
        guard let current = run else { return }
        run = nil
        if current.emitted >= 2 {
            text("\"/>\n")
        } else if let first = current.first {
            // One point alone is a dot, so it is not lost.
            text("<circle class=\"d\(current.phase.cssClass)\" cx=\"\(SVGText.number(first.x))\" cy=\"\(SVGText.number(first.y))\" r=\"1.5\"/>\n")
        }
    }

    private mutating func emit(_ pixel: PathDecimator.Pixel) {
        guard var current = run else { return }
        current.emitted += 1
        run = current
        if current.emitted == 1 {
            run?.first = pixel
            return
        }
        if current.emitted == 2, let first = current.first {
            text("<polyline class=\"\(current.phase.cssClass)\" points=\"")
            SVGText.appendNumber(first.x, to: &output)
            output.append(UInt8(ascii: ","))
            SVGText.appendNumber(first.y, to: &output)
        }
        output.append(UInt8(ascii: " "))
        SVGText.appendNumber(pixel.x, to: &output)
        output.append(UInt8(ascii: ","))
        SVGText.appendNumber(pixel.y, to: &output)
    }

    /// Closes the track and writes the marks, the accuracy layer, the scale bar, the north arrow, the title
    /// and the legend.
    mutating func end() {
        endRun()
        if awaitingDelivery != nil { deliverPending(at: previous?.pixel) }
        text("</g>\n")
        output.append(contentsOf: dots)
        output.append(contentsOf: marks)
        startAndEnd()
        if summary.hasAccuracy {
            text("<defs><g id=\"accuracy\" class=\"acc\">\n")
            output.append(contentsOf: accuracy)
            text("</g></defs>\n")
        }
        scaleBar()
        northArrow()
        title()
        legend()
        text("</svg>\n")
    }

    private mutating func startAndEnd() {
        if let first = firstPixel {
            text("<circle cx=\"\(SVGText.number(first.x))\" cy=\"\(SVGText.number(first.y))\" r=\"5\" fill=\"#2e7d32\" stroke=\"#fff\" stroke-width=\"1.5\"/>\n")
        }
        if let last = previous?.pixel {
            text("<rect x=\"\(SVGText.number(last.x - 4.5))\" y=\"\(SVGText.number(last.y - 4.5))\" width=\"9\" height=\"9\" fill=\"#222\" stroke=\"#fff\" stroke-width=\"1.5\"/>\n")
        }
    }

    private var firstPixel: PathDecimator.Pixel?

    private mutating func scaleBar() {
        let (metres, pixels) = frame.scaleBar
        let x = frame.plotLeft + 14, y = frame.plotTop + frame.plotHeight - 16
        text("""
            <g stroke="#222" stroke-width="2"><path d="M\(SVGText.number(x)) \(SVGText.number(y - 5))v5h\(SVGText.number(pixels))v-5" fill="none"/></g>
            <text x="\(SVGText.number(x + pixels / 2))" y="\(SVGText.number(y - 9))" font-size="12" text-anchor="middle">\(PlotFrame.lengthText(metres))</text>

            """)
    }

    private mutating func northArrow() {
        let x = frame.plotLeft + frame.plotWidth - 24, y = frame.plotTop + 16
        text("""
            <g><path d="M\(SVGText.number(x)) \(SVGText.number(y))l8 26l-8 -6l-8 6z" fill="#222"/>\
            <text x="\(SVGText.number(x))" y="\(SVGText.number(y + 42))" font-size="13" font-weight="bold" text-anchor="middle">N</text></g>

            """)
    }

    private mutating func title() {
        var parts = ["\(Self.grouped(summary.pointCount)) point\(summary.pointCount == 1 ? "" : "s")"]
        if let first = summary.firstTime, let last = summary.lastTime {
            parts.append(Self.durationText(last - first))
        }
        parts.append(PlotFrame.lengthText(summary.distance))
        text("<text x=\"\(SVGText.number(frame.plotLeft))\" y=\"26\" font-size=\"17\" font-weight=\"bold\">\(SVGText.escaped(name))</text>\n")
        var line = parts.joined(separator: " · ")
        if let first = summary.firstTime, let last = summary.lastTime {
            line += " · " + Self.timeText(first) + " → " + Self.timeText(last)
        }
        text("<text x=\"\(SVGText.number(frame.plotLeft))\" y=\"48\" font-size=\"13\" fill=\"#444\">\(SVGText.escaped(line))</text>\n")
    }

    private mutating func legend() {
        var entries: [(symbol: String, label: String)] = []
        for phase in PlotPhase.allCases where summary.phases.contains(phase) {
            entries.append(("<path class=\"\(phase.cssClass)\" d=\"M0 0h22\"/>", phase.label))
        }
        entries.append(("<circle cx=\"11\" cy=\"0\" r=\"5\" fill=\"#2e7d32\"/>", "start"))
        entries.append(("<rect x=\"6.5\" y=\"-4.5\" width=\"9\" height=\"9\" fill=\"#222\"/>", "end"))
        if counts.held > 0 { entries.append(("<circle class=\"held\" cx=\"11\" cy=\"0\" r=\"3.2\"/>", "held fix (acquired)")) }
        if counts.deliveries > 0 { entries.append(("<path class=\"dlv\" d=\"M11 -7l7 7l-7 7l-7 -7z\"/>", "held batch delivered")) }
        if summary.hasAccuracy { entries.append(("<circle class=\"acc\" cx=\"11\" cy=\"0\" r=\"7\"/>", "horizontal accuracy")) }
        if counts.gaps > 0 { entries.append(("<path class=\"gap\" d=\"M0 0h22\"/>", "time gap (\(Self.grouped(counts.gaps)))")) }
        if counts.fixLosses > 0 {
            entries.append(("<path class=\"x\" d=\"M7 -4l8 8m0 -8l-8 8\"/><path class=\"loss\" d=\"M16 0h10\"/>", "fix lost (\(Self.grouped(counts.fixLosses)))"))
        }
        if counts.undrawn > 0 { entries.append(("", "\(Self.grouped(counts.undrawn)) more marks not drawn")) }
        var x = frame.plotLeft, y = frame.plotTop + frame.plotHeight + 26
        for entry in entries {
            let width = 34 + Double(entry.label.count) * 7.2 + 18
            if x + width > frame.width - 10, x > frame.plotLeft {
                x = frame.plotLeft
                y += 22
            }
            text("<g transform=\"translate(\(SVGText.number(x)) \(SVGText.number(y)))\">\(entry.symbol)<text x=\"30\" y=\"4.5\" font-size=\"12\">\(SVGText.escaped(entry.label))</text></g>\n")
            x += width
        }
    }

    /// 1234567 as "1,234,567".
    static func grouped(_ value: Int) -> String {
        let digits = Array(String(value))
        var result = ""
        for (index, digit) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { result.append(",") }
            result.append(digit)
        }
        return result
    }

    /// A duration for people: "45 s", "12 min 5 s", "3 h 20 min", "2 d 4 h".
    static func durationText(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "?" }
        if seconds < 60 { return seconds < 10 && seconds != seconds.rounded() ? String(format: "%.1f s", seconds) : "\(Int(seconds.rounded())) s" }
        let total = Int(seconds.rounded())
        if total < 3600 { return "\(total / 60) min" + (total % 60 > 0 ? " \(total % 60) s" : "") }
        if total < 86400 { return "\(total / 3600) h" + (total % 3600 / 60 > 0 ? " \(total % 3600 / 60) min" : "") }
        return "\(total / 86400) d" + (total % 86400 / 3600 > 0 ? " \(total % 86400 / 3600) h" : "")
    }

    /// A time as "2024-05-01 06:00:00Z" (UTC).
    static func timeText(_ seconds: Double) -> String {
        var time = time_t(seconds.rounded(.down))
        var parts = tm()
        guard gmtime_r(&time, &parts) != nil else { return "?" }
        return String(
            format: "%04d-%02d-%02d %02d:%02d:%02dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
            Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }
}
