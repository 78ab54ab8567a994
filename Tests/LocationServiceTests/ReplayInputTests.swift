import Foundation
import Testing

/// What `locationctl replay` says about an input it cannot read: the real reason, exit 66.
@Suite("locationctl replay: inputs that cannot be read")
struct ReplayInputTests {
    @Test("a directory, a symbolic link loop and a dangling link each get their own reason, not 'no such file'")
    func reasons() throws {
        let directory = TemporaryDirectory()
        let loopA = directory.file("loop-a.gpx"), loopB = directory.file("loop-b.gpx")
        try FileManager.default.createSymbolicLink(atPath: loopA, withDestinationPath: loopB)
        try FileManager.default.createSymbolicLink(atPath: loopB, withDestinationPath: loopA)
        let dangling = directory.file("dangling.gpx")
        try FileManager.default.createSymbolicLink(atPath: dangling, withDestinationPath: directory.file("gone.gpx"))
        for (path, reason) in [
            (directory.path, "is a directory, not a GPX file"), (loopA, "Too many levels of symbolic links"),
            (dangling, "a symbolic link to a missing file"), (directory.file("missing.gpx"), "no such file"),
        ] {
            let result = try Tool.run("locationctl", ["replay", path, "--fast"], in: directory)
            #expect(result.status == 66)
            #expect(result.stderr == "locationctl: \(path): \(reason)\n")
        }
    }
}

/// `--help` and `help` print the help, with the documented ranges.
@Suite("Help")
struct HelpTests {
    @Test("--help, -h and help SUBCOMMAND print the help on standard output, exit 0", arguments: [
        ("locationctl", ["--help"], "OVERVIEW: Watch, replay and query"),
        ("locationctl", ["replay", "--help"], "0.001…1000000 ×"),
        ("locationctl", ["help", "watch"], "--duration"),
        ("locationd", ["-h"], "--check-config"),
    ])
    func help(tool: String, arguments: [String], text: String) throws {
        let directory = TemporaryDirectory()
        let result = try Tool.run(tool, arguments, in: directory)
        #expect(result.status == 0)
        #expect(result.stdout.contains(text), "\(result.stdout)")
    }
}
