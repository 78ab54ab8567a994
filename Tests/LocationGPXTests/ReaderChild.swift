import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// One GPX file read by `location-test-child --read FILE` in a child process: what it printed, how it ended, how long
/// it took and how much memory the read itself added. A crash or a hang there cannot take the test run
/// down, and the memory figure is the read's own (the child resets its peak RSS just before reading).
struct ReaderChild {
    /// The JSON line location-test-child prints last.
    struct Summary: Decodable {
        struct Failure: Decodable {
            var code: String
            var line: Int
            var column: Int
            var message: String
            var description: String
        }

        var points: Int
        var seconds: Double
        var baselineKiB: Int
        var peakKiB: Int
        var peakReset: Bool
        var heldBytes: Int
        var sanitizer: String?
        var error: Failure?
    }

    /// The exit status, 128 + the signal when killed, or -1 when it was still running at the timeout.
    var status: Int32
    var standardOutput: String
    var standardError: String
    var summary: Summary?
    var wallTime: Duration

    /// Peak RSS growth of the read in KiB (`Int.max` when the child printed no summary).
    var growthKiB: Int { summary.map { $0.peakKiB - $0.baselineKiB } ?? .max }

    /// Whether the child runs under a sanitizer, whose shadow memory and quarantine make RSS figures
    /// meaningless; memory bounds are then reported but not asserted.
    var memoryIsComparable: Bool { summary?.sanitizer == nil }

    /// location-test-child, built next to the test runner.
    static let executable: String = {
        let runner = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: runner).deletingLastPathComponent().appendingPathComponent("location-test-child").path
    }()

    /// Reads `path` (`--read`, or `--read-into-memory` for the control that holds the whole file) in a child
    /// process; a child still running after `timeout` is killed and reported with status -1.
    static func read(_ path: String, intoMemory: Bool = false, timeout: Duration = .seconds(120)) throws -> ReaderChild {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let out = "\(directory)/stdout", err = "\(directory)/stderr"
        _ = FileManager.default.createFile(atPath: out, contents: nil)
        _ = FileManager.default.createFile(atPath: err, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = [intoMemory ? "--read-into-memory" : "--read", path]
        process.standardOutput = FileHandle(forWritingAtPath: out)
        process.standardError = FileHandle(forWritingAtPath: err)
        let start = ContinuousClock.now
        try process.run()
        let deadline = start + timeout
        while process.isRunning, ContinuousClock.now < deadline { usleep(5_000) }
        var status: Int32 = -1
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        } else {
            process.waitUntilExit()
            status = process.terminationStatus + (process.terminationReason == .uncaughtSignal ? 128 : 0)
        }
        let wallTime = start.duration(to: .now)
        let standardOutput = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
        let standardError = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
        let last = standardOutput.split(separator: "\n").last.map(String.init) ?? ""
        let summary = try? JSONDecoder().decode(Summary.self, from: Data(last.utf8))
        return ReaderChild(
            status: status, standardOutput: standardOutput, standardError: standardError, summary: summary,
            wallTime: wallTime)
    }
}
