import Foundation
import LocationCore
import Testing

/// `locationctl watch` against a real gpsd says it is waiting for a fix instead of showing nothing.
@Suite(
    "locationctl watch while the receiver has no fix", .serialized,
    .enabled(if: GPSDCommandTests.capturesCanBeReplayed, GPSDCommandTests.capturesMissing))
struct WaitingForFixCommandTests {
    /// Runs the tool with standard error on its standard output: in text the lines about the receiver go to
    /// standard error and the locations to standard output, and these tests read them in the order written.
    static let bothStreams = ["/bin/sh", "-c", #"exec "$0" "$@" 2>&1"#, "{}"]

    @Test("a receiver that never fixes: watch says it is waiting for a fix, not a blank screen")
    func neverFixes() throws {
        let capture = try GPSDCommandTests.capture("skytraq.log")
        let directory = TemporaryDirectory()
        let gpsd = try FakeGPSD(capture: capture, directory: directory)
        let result = try Tool.run(
            "locationctl", ["watch", "--gpsd", "127.0.0.1:\(gpsd.port)", "--duration", "4"], launcher: Self.bothStreams, timeout: 60,
            in: directory)
        #expect(result.status == 0, "\(result.stderr)")
        // After the lifecycle lines, the first thing said about the receiver.
        let said = result.lines.filter { !$0.hasPrefix("── state:") }
        #expect(said.first == "── waiting for a fix", "\(result.stdout)")
        #expect(!result.stdout.contains("fix acquired"))
    }

    @Test("a receiver that loses its fix: waiting with the satellites it sees, then the fix comes, then fixes again", .timeLimit(.minutes(2)))
    func losesAndRegainsItsFix() throws {
        let capture = try GPSDCommandTests.capture("quectel.log")
        let directory = TemporaryDirectory()
        let gpsd = try FakeGPSD(capture: capture, directory: directory)
        // Watched until the fix is back and fixes with their satellites follow it, then interrupted as a
        // user would (Ctrl-C: exit 130); --duration only caps a run that never gets there.
        let (process, out, _) = try Tool.start(
            "locationctl", ["watch", "--gpsd", "127.0.0.1:\(gpsd.port)", "--duration", "40"], launcher: Self.bothStreams, in: directory)
        func lines() -> [String] { ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }
        func regained(_ lines: [String]) -> Bool {
            guard let acquired = lines.firstIndex(of: "── fix acquired") else { return false }
            return lines[(acquired + 1)...].contains { $0.hasPrefix("2020-10-07 ") && $0.contains(/\d+\/ ?\d+$/) }
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while process.isRunning, !regained(lines()), ContinuousClock.now < deadline { usleep(50_000) }
        let interrupted = process.isRunning
        if interrupted { kill(process.processIdentifier, SIGINT) }
        process.waitUntilExit()
        #expect(interrupted, "watch was still running when the fix was back")
        #expect(process.terminationStatus == 130, "exit status after Ctrl-C")
        let lines = lines()
        let waiting = lines.firstIndex { $0.hasPrefix("── waiting for a fix (") && $0.hasSuffix(" satellites seen)") }
        let acquired = lines.firstIndex { $0 == "── fix acquired" }
        #expect(waiting != nil && acquired != nil, "\(lines.joined(separator: "\n"))")
        if let waiting, let acquired {
            #expect(waiting < acquired)
            #expect(lines[..<waiting].contains { $0.hasPrefix("2020-10-07 ") }, "fixes before the fix was lost")
            #expect(lines[(acquired + 1)...].first?.hasPrefix("2020-10-07 ") == true, "a fix right after 'fix acquired'")
            #expect(lines[(acquired + 1)...].contains { $0.contains(/\d+\/ ?\d+$/) })
        }
    }
}
