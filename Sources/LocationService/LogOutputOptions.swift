import ArgumentParser
import LocationCore

/// The flags of a logger's output, shared by `watch` and `replay`: `--append`, `--split-gap`, `--min-move`.
package struct LogOutputOptions: ParsableArguments {
    /// Creates the options (ArgumentParser fills them in).
    package init() {}

    @Flag(help: "Add to the --output file instead of replacing it: JSON lines, text and NMEA after what it holds; a GPX document gets a new track in place of its </gpx> (a file cut inside a point is continued after its last whole one; any other file that does not end with </gpx> is refused, exit 65). The file is locked while written, as every output file is: a second writer exits 73.")
    package var append = false

    @Option(name: .customLong("split-gap"), parsing: .unconditional, help: ArgumentHelp("GPX: start a new track segment after a gap in fix time longer than this (\(ValueRange.splitGap)); as gpxlogger -i.", valueName: "SEC"))
    package var splitGap: NumberArgument?

    @Option(name: .customLong("min-move"), parsing: .unconditional, help: ArgumentHelp("Write no fix closer than this to the last one written (\(ValueRange.distance)); as gpxlogger -m. Unlike --distance-filter, it applies to what is written, held batches included.", valueName: "METRES"))
    package var minMove: NumberArgument?

    @Option(help: ArgumentHelp("Start a new file at each UTC day or hour of the fix time, or at a size (4k to 1024G, such as 10M); --output is then a pattern: %Y %m %d %H %F (the date) %n (the file's number). Files are added to, never replaced; SIGHUP closes and reopens the current one.", valueName: "daily|hourly|SIZE"))
    package var rotate: String?

    @Option(name: .customLong("keep"), parsing: .unconditional, help: ArgumentHelp("With --rotate: keep this many files, the current one included, deleting the oldest (\(LogOutputOptions.keepRange)).", valueName: "N"))
    package var keep: NumberArgument?

    @Flag(help: "With --rotate: compress each file with gzip once the log has moved on from it.")
    package var gzip = false

    /// The files `--keep` may keep.
    package static let keepRange = ValueRange(1...1_000_000, unit: "files")

    /// The options, checked: a value outside its range is a usage failure (64) naming the flag.
    package func resolve(output: String?) throws(CommandFailure) -> EventWriter.LogOptions {
        if append, output == nil || output == "-" {
            throw CommandFailure.usage("--append adds to the --output file; for standard output use the shell's >> (JSON lines, text, NMEA)")
        }
        if rotate == nil, keep != nil || gzip {
            throw CommandFailure.usage("\(keep != nil ? "--keep" : "--gzip") goes with --rotate: without rotation there is one file")
        }
        var rotation: LogRotation?
        if let rotate {
            guard let output, output != "-" else {
                throw CommandFailure.usage("--rotate writes files: give --output a file name pattern, such as track-%F.gpx")
            }
            rotation = try LogRotation(
                pattern: output, period: try LogRotation.period(parsing: rotate),
                keep: try keep?.integer(in: Self.keepRange, for: "--keep"), gzip: gzip)
        }
        return EventWriter.LogOptions(
            append: append || rotation != nil, splitGap: try splitGap?.value(in: .splitGap, for: "--split-gap"),
            minimumMove: try minMove?.value(in: .distance, for: "--min-move"), rotation: rotation)
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
