import ArgumentParser
import Foundation
import LocationCore
import LocationService
import TrackPlot

#if canImport(Glibc)
    import Glibc
#endif

/// `locationctl plot`: draws a GPX track or a replay's or watch's JSON lines as an SVG picture.
struct Plot: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Draw a GPX track or locationctl's JSON lines as an SVG picture.",
        discussion: """
            The input is a GPX file or the JSON lines that replay and watch print with --format json \
            (told apart by content); - reads standard input. The track is drawn on a local flat projection \
            around its centre, with a scale bar, a north arrow, a title (name, points, time span, distance) \
            and a legend. From JSON lines the line is coloured by lifecycle phase (foreground, background, \
            suspended); held fixes are ringed where they were acquired and a diamond marks where their batch \
            was delivered. Known horizontal accuracy is a translucent circle. A time gap well above the \
            typical interval (dashed grey) and a lost fix (a red cross, then dotted red) break the line. \
            Long tracks are thinned to what can be seen, in bounded memory: a million points make a \
            picture of a few hundred kilobytes.

            --output FILE is written beside the path and renamed over it when complete, so a failed plot \
            leaves an existing file as it was; it keeps the mode of the file it replaces, else 0600. \
            --output - writes standard output.

            Exit codes: 0 ok (also when the reader of standard output goes away), 64 usage, 65 the input \
            is not GPX or JSON lines, is malformed, or holds no positions, 66 input missing or a directory, \
            73 the output is a directory or a device or cannot be created, 74 the output cannot be written.
            """)

    @Argument(help: ArgumentHelp("The track: a GPX file or JSON lines; - reads standard input.", valueName: "FILE.gpx|FILE.jsonl|-"))
    var file: String

    @Option(help: ArgumentHelp("Write the SVG here; - is standard output.", valueName: "FILE.svg"))
    var output: String

    @Option(name: .customLong("width"), parsing: .unconditional, help: ArgumentHelp("Picture width (default 1000; \(Plot.sizeRange)).", valueName: "PIXELS"))
    var widthArgument: NumberArgument?

    @Option(name: .customLong("height"), parsing: .unconditional, help: ArgumentHelp("Picture height (default 750; \(Plot.sizeRange)).", valueName: "PIXELS"))
    var heightArgument: NumberArgument?

    /// The picture sizes accepted.
    static let sizeRange = ValueRange(TrackPlotter.sizeRange, unit: "px")

    private var width: Double { get throws(CommandFailure) { try widthArgument?.value(in: Self.sizeRange, for: "--width") ?? 1000 } }
    private var height: Double { get throws(CommandFailure) { try heightArgument?.value(in: Self.sizeRange, for: "--height") ?? 750 } }

    func validate() throws {
        do {
            _ = try width
            _ = try height
        } catch { throw ValidationError(error.message) }
    }

    func run() async throws {
        try await runReportingFailures {
            signal(SIGPIPE, SIG_IGN)
            try OutputPathCheck.check(output, isNot: file)
            let input = try PlotInput(file)
            let destination = try PlotOutput(output)
            do {
                try TrackPlotter.render(
                    name: input.title, width: try width, height: try height,
                    items: { visit in try input.read(visit) },
                    write: { bytes in try destination.write(bytes) })
            } catch is PlotOutput.ReaderGone {
                return
            } catch let error as PlotError {
                throw error.code == .invalidOption ? CommandFailure.usage(error.message) : CommandFailure.badData(error.message)
            }
            try destination.commit()
            for note in input.notes { EventWriter.writeToStandardError("locationctl: \(TerminalText.escaped(note))\n") }
        }
    }
}
