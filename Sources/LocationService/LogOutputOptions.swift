import ArgumentParser
import LocationCore

/// The flags of a logger's output, shared by `watch` and `replay`: `--append`, `--split-gap`, `--min-move`.
package struct LogOutputOptions: ParsableArguments {
    /// Creates the options (ArgumentParser fills them in).
    package init() {}

    @Flag(help: "Add to the --output file instead of replacing it: JSON lines, text and NMEA after what it holds; a GPX document gets a new track in place of its </gpx> (a file that does not end with </gpx> is refused, exit 65). The file is locked while written: a second writer exits 73.")
    package var append = false

    @Option(name: .customLong("split-gap"), parsing: .unconditional, help: ArgumentHelp("GPX: start a new track segment after a gap in fix time longer than this (\(ValueRange.splitGap)); as gpxlogger -i.", valueName: "SEC"))
    package var splitGap: NumberArgument?

    @Option(name: .customLong("min-move"), parsing: .unconditional, help: ArgumentHelp("Write no fix closer than this to the last one written (\(ValueRange.distance)); as gpxlogger -m. Unlike --distance-filter, it applies to what is written, held batches included.", valueName: "METRES"))
    package var minMove: NumberArgument?

    /// The options, checked: a value outside its range is a usage failure (64) naming the flag.
    package func resolve(output: String?) throws(CommandFailure) -> EventWriter.LogOptions {
        if append, output == nil || output == "-" {
            throw CommandFailure.usage("--append adds to the --output file; for standard output use the shell's >> (JSON lines, text, NMEA)")
        }
        return EventWriter.LogOptions(
            append: append, splitGap: try splitGap?.value(in: .splitGap, for: "--split-gap"),
            minimumMove: try minMove?.value(in: .distance, for: "--min-move"))
    }
}

extension CommandFailure {
    /// The exit code for an output that could not be opened: 65 for a file `--append` cannot continue (not
    /// a whole GPX document), 64 for a GPX continuation of something that is not a file, else 73 (cannot
    /// create, or another program is writing it).
    package static func openingOutput(_ error: LocationError) -> CommandFailure {
        switch error.code {
        case .outputNotContinuable: .badData(error.message)
        case .invalidConfiguration: .usage(error.message)
        default: .cannotCreate(error.message)
        }
    }
}
