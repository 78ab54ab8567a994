import ArgumentParser
import Foundation
import LocationCore
import LocationGPX

/// The replay flags shared by `locationctl replay` and `locationd --replay`.
package struct ReplayOptions: ParsableArguments {
    /// Creates the options (ArgumentParser fills them in).
    package init() {}

    @Option(parsing: .unconditional, help: ArgumentHelp("Play this many times faster than recorded (\(ValueRange.speedFactor)).", valueName: "X"))
    package var speed: NumberArgument?

    @Flag(help: "Play as fast as possible.")
    package var fast = false

    @Flag(help: "Start over after the last point, until stopped.")
    package var loop = false

    @Option(name: .customLong("start-at"), parsing: .unconditional, help: ArgumentHelp("Start at this point (0-based; \(ReplayOptions.startRange)).", valueName: "N"))
    package var startAt: NumberArgument?

    @Option(name: .customLong("max-gap"), parsing: .unconditional, help: ArgumentHelp("Shorten gaps between segments to this many seconds (default 10; \(ValueRange.trackTime)).", valueName: "SEC"))
    package var maxGap: NumberArgument?

    @Option(name: .customLong("untimed-speed"), parsing: .unconditional, help: ArgumentHelp("Speed along points without times (default 5; \(ValueRange.speed)).", valueName: "MPS"))
    package var untimedSpeed: NumberArgument?

    /// The points `--start-at` may name.
    static let startRange = ValueRange(0...1e15, unit: "")

    @Option(help: ArgumentHelp("Timestamps as recorded, or rebased to now.", valueName: "recorded|now"))
    package var timestamps: TimestampChoice = .recorded

    /// `recorded` or `now`.
    package enum TimestampChoice: String, ExpressibleByArgument, CaseIterable, Sendable {
        /// The file's times.
        case recorded
        /// Times rebased to the start of the replay.
        case now
    }

    package func validate() throws {
        if fast, speed != nil { throw ValidationError("use either --speed or --fast, not both") }
        do { _ = try sourceOptions() } catch { throw ValidationError(error.message) }
    }

    /// The replay source's options these flags describe; a usage failure (64) naming the first flag whose
    /// value is out of its range.
    package func sourceOptions() throws(CommandFailure) -> GPXReplaySource.Options {
        var options = GPXReplaySource.Options()
        options.pacing = fast ? .asFastAsPossible : .speedFactor(try speed?.value(in: .speedFactor, for: "--speed") ?? 1)
        options.loop = loop
        if let startAt { options.start = .index(try startAt.integer(in: Self.startRange, for: "--start-at")) }
        if let maxGap { options.maxGap = try maxGap.duration(in: .trackTime, for: "--max-gap") }
        if let untimedSpeed { options.untimedSpeed = try untimedSpeed.value(in: .speed, for: "--untimed-speed") }
        options.timestamps = timestamps == .now ? .rebasedToNow : .recorded
        return options
    }

    /// Checks that `path` can be replayed: it exists (after symbolic links), is not a directory, and this
    /// user may read it; throws exit 66 with the system's reason otherwise. A FIFO or a device passes: it is
    /// read as it comes.
    package static func checkReadable(_ path: String) throws(CommandFailure) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let number = errno
            var link = stat()
            let dangling = number == ENOENT && lstat(path, &link) == 0
            let reason = dangling ? "a symbolic link to a missing file" : number == ENOENT ? "no such file" : String(cString: strerror(number))
            throw CommandFailure.missingInput("\(path): \(reason)")
        }
        if info.st_mode & S_IFMT == S_IFDIR { throw CommandFailure.missingInput("\(path): is a directory, not a GPX file") }
        // A device (/dev/zero, /dev/urandom) never ends; standard input may be one (a terminal) and is read as given.
        let type = info.st_mode & S_IFMT
        if type == S_IFCHR || type == S_IFBLK, path != "/dev/stdin" {
            throw CommandFailure.missingInput("\(path): is a device, not a GPX file")
        }
        guard access(path, R_OK) == 0 else {
            throw CommandFailure.missingInput("\(path): \(String(cString: strerror(errno)))")
        }
    }
}
