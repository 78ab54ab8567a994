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

    @Test("a receiver that loses its fix: waiting with the satellites it sees, then the fix comes, then fixes again")
    func losesAndRegainsItsFix() throws {
        let capture = try GPSDCommandTests.capture("quectel.log")
        let directory = TemporaryDirectory()
        let gpsd = try FakeGPSD(capture: capture, directory: directory)
        let result = try Tool.run(
            "locationctl", ["watch", "--gpsd", "127.0.0.1:\(gpsd.port)", "--duration", "25"], launcher: Self.bothStreams, timeout: 60,
            in: directory)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.lines
        let waiting = lines.firstIndex { $0.hasPrefix("── waiting for a fix (") && $0.hasSuffix(" satellites seen)") }
        let acquired = lines.firstIndex { $0 == "── fix acquired" }
        #expect(waiting != nil && acquired != nil, "\(result.stdout)")
        if let waiting, let acquired {
            #expect(waiting < acquired)
            #expect(lines[..<waiting].contains { $0.hasPrefix("2020-10-07T") }, "fixes before the fix was lost")
            #expect(lines[(acquired + 1)...].first?.hasPrefix("2020-10-07T") == true, "a fix right after 'fix acquired'")
            #expect(lines[(acquired + 1)...].contains { $0.contains(" sats") })
        }
    }
}
