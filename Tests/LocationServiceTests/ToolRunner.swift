import Foundation
import GPSDTestSupport
import LocationCore
import LocationGPX
import LocationTesting
import Testing

/// The result of running one of the built executables.
struct ToolResult: Sendable {
    var status: Int32
    var stdout: String
    var stderr: String
    /// Whether a signal ended the process (then ``status`` is the signal's number).
    var signaled = false

    var lines: [String] { stdout.split(separator: "\n").map(String.init) }
}

/// Runs the project's executables as a user would, with files for standard output and error.
enum Tool {
    /// The directory holding the built executables (next to the test bundle).
    static let binDirectory: URL = {
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<4 where !FileManager.default.fileExists(atPath: url.appendingPathComponent("locationctl").path) {
            url.deleteLastPathComponent()
        }
        if FileManager.default.fileExists(atPath: url.appendingPathComponent("locationctl").path) { return url }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug")
    }()

    /// The path of one of the built executables.
    static func path(_ name: String) -> String { binDirectory.appendingPathComponent(name).path }

    /// Starts `name` with `arguments`; the caller waits for it.
    ///
    /// With `launcher`, runs that program instead, with `name`'s path among its arguments where `{}` stands,
    /// e.g. `["/usr/bin/setpriv", "--reuid=65534", "{}"]`, or any other program when `name` is a path.
    static func start(
        _ name: String, _ arguments: [String], environment: [String: String] = [:], launcher: [String] = [],
        in directory: TemporaryDirectory
    ) throws -> (Process, stdout: String, stderr: String) {
        let process = Process()
        let executable = name.hasPrefix("/") ? name : binDirectory.appendingPathComponent(name).path
        if let program = launcher.first {
            process.executableURL = URL(fileURLWithPath: program)
            process.arguments = launcher.dropFirst().map { $0 == "{}" ? executable : $0 } + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
        }
        var env = ProcessInfo.processInfo.environment
        env["XDG_RUNTIME_DIR"] = directory.path
        for (key, value) in environment { env[key] = value }
        process.environment = env
        // Relative paths a tool is given (`--output 0` in the boundary sweep) land in the test's directory.
        process.currentDirectoryURL = URL(fileURLWithPath: directory.path)
        let label = name.split(separator: "/").last.map(String.init) ?? name
        let out = directory.file("\(label)-\(UUID().uuidString).out")
        let err = directory.file("\(label)-\(UUID().uuidString).err")
        _ = FileManager.default.createFile(atPath: out, contents: nil)
        _ = FileManager.default.createFile(atPath: err, contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: out)
        process.standardError = FileHandle(forWritingAtPath: err)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return (process, out, err)
    }

    /// Runs `name` to completion (killing it after `timeout` seconds).
    static func run(
        _ name: String, _ arguments: [String], environment: [String: String] = [:], launcher: [String] = [],
        timeout: Double = 60, in directory: TemporaryDirectory
    ) throws -> ToolResult {
        let (process, out, err) = try start(name, arguments, environment: environment, launcher: launcher, in: directory)
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline { usleep(10_000) }
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
            Issue.record("\(name) \(arguments.joined(separator: " ")) did not finish within \(timeout) s")
        }
        process.waitUntilExit()
        return ToolResult(
            status: process.terminationStatus,
            stdout: (try? String(contentsOfFile: out, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: err, encoding: .utf8)) ?? "",
            signaled: process.terminationReason == .uncaughtSignal)
    }
}

/// A fresh temporary directory removed when the test ends.
final class TemporaryDirectory: Sendable {
    let path: String

    init() {
        path = NSTemporaryDirectory() + "lsvc-" + String(UUID().uuidString.prefix(8))
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    func file(_ name: String) -> String { path + "/" + name }

    /// Writes a GPX track of walk fixes (one per second) and returns its path.
    func track(_ name: String = "walk.gpx", count: Int) throws -> String {
        let path = file(name)
        let writer = try GPXWriter(path: path)
        try writer.write(contentsOf: LocationFixtures.walk(count: count))
        try writer.finish()
        return path
    }
}

/// Decodes JSON lines into objects.
func jsonObjects(_ lines: [String]) throws -> [[String: Any]] {
    try lines.map { line in
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
        return try #require(object as? [String: Any], "not an object: \(line)")
    }
}

/// The shared test data folder beside the checkout, if present.
let sharedTestData: String? = {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let path = root.deletingLastPathComponent().appendingPathComponent("shared/testdata").path
    return FileManager.default.fileExists(atPath: path) ? path : nil
}()

/// The real GPX files: `$GPX_TESTDATA` when set (as for LocationGPXTests and scripts/fuzz), else the `gpx`
/// folder of the shared test data; `nil` when that folder does not exist.
let sharedGPXData: String? = {
    let path = ProcessInfo.processInfo.environment["GPX_TESTDATA"] ?? sharedTestData.map { $0 + "/gpx" }
    return path.flatMap { FileManager.default.fileExists(atPath: $0) ? $0 : nil }
}()

extension Trait where Self == ConditionTrait {
    /// Not run under a sanitizer that lists `test` (`MODULE.SUITE` or `MODULE.SUITE/TEST()`) in
    /// scripts/sanitizers/not-run, the one list of such tests, whose reason the skip reports.
    static func sanitizerExclusion(_ test: String) -> Self {
        let reason = Sanitizer.exclusion(of: test)
        return .enabled(if: reason == nil, Comment(rawValue: reason ?? ""))
    }
}
