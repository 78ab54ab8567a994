import ArgumentParser
import Foundation
import LocationCore
import LocationGPX

/// The replay flags shared by `locationctl replay` and `locationd --replay`.
public struct ReplayOptions: ParsableArguments {
    /// Creates the options (ArgumentParser fills them in).
    public init() {}

    @Option(help: ArgumentHelp("Play this many times faster than recorded (any positive number).", valueName: "X"))
    public var speed: Double?

    @Flag(help: "Play as fast as possible.")
    public var fast = false

    @Flag(help: "Start over after the last point, until stopped.")
    public var loop = false

    @Option(name: .customLong("start-at"), help: ArgumentHelp("Start at this point (0-based).", valueName: "N"))
    public var startAt: Int?

    @Option(name: .customLong("max-gap"), help: ArgumentHelp("Shorten gaps between segments to this many seconds (default 10).", valueName: "SEC"))
    public var maxGap: Double?

    @Option(name: .customLong("untimed-speed"), help: ArgumentHelp("Speed along points without times, m/s (default 5).", valueName: "MPS"))
    public var untimedSpeed: Double?

    @Option(help: ArgumentHelp("Timestamps as recorded, or rebased to now.", valueName: "recorded|now"))
    public var timestamps: TimestampChoice = .recorded

    /// `recorded` or `now`.
    public enum TimestampChoice: String, ExpressibleByArgument, CaseIterable, Sendable {
        /// The file's times.
        case recorded
        /// Times rebased to the start of the replay.
        case now
    }

    public func validate() throws {
        if fast, speed != nil { throw ValidationError("use either --speed or --fast, not both") }
        if let speed, !(speed.isFinite && speed > 0) { throw ValidationError("--speed must be a positive number, got \(speed)") }
        if let startAt, startAt < 0 { throw ValidationError("--start-at must be 0 or more, got \(startAt)") }
        if let maxGap, !(maxGap.isFinite && maxGap >= 0) { throw ValidationError("--max-gap must be 0 or more seconds") }
        if let untimedSpeed, !(untimedSpeed.isFinite && untimedSpeed > 0) {
            throw ValidationError("--untimed-speed must be a positive number of metres per second")
        }
    }

    /// The replay source's options these flags describe.
    public var sourceOptions: GPXReplaySource.Options {
        var options = GPXReplaySource.Options()
        options.pacing = fast ? .asFastAsPossible : .speedFactor(speed ?? 1)
        options.loop = loop
        if let startAt { options.start = .index(startAt) }
        if let maxGap { options.maxGap = .seconds(maxGap) }
        if let untimedSpeed { options.untimedSpeed = untimedSpeed }
        options.timestamps = timestamps == .now ? .rebasedToNow : .recorded
        return options
    }

    /// Checks that `path` is a readable file; throws exit 66 naming it otherwise.
    public static func checkReadable(_ path: String) throws(CommandFailure) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
            throw CommandFailure.missingInput("\(path): no such file")
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw CommandFailure.missingInput("\(path): permission denied")
        }
    }
}
