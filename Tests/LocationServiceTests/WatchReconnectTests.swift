import Foundation
import LocationCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `locationctl watch` through locationd, across the daemon's restarts.
@Suite("locationctl watch outlives locationd's restarts", .serialized)
struct WatchReconnectTests {
    static func locations(_ path: String) -> Int {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n")
            .filter { $0.contains(#""type":"location""#) }.count
    }

    @Test(
        "a watch goes on through a graceful restart and a kill -9 of locationd, says so in its stream, and ends at its --count with 0",
        .timeLimit(.minutes(2)))
    func watchOutlivesRestarts() throws {
        let directory = TemporaryDirectory()
        let first = try RunningDaemon(directory: directory)
        let (watch, out, err) = try Tool.start(
            "locationctl", ["watch", "--format", "json", "--count", "150", "--socket", first.socket], in: directory)
        #expect(eventually { Self.locations(out) >= 5 }, "\(String(describing: try? String(contentsOfFile: err, encoding: .utf8)))")

        first.process.terminate()
        first.process.waitUntilExit()
        let atStop = Self.locations(out)
        let second = try RunningDaemon(directory: directory)
        #expect(eventually(20) { Self.locations(out) >= atStop + 5 }, "fixes from the restarted daemon")
        #expect(watch.isRunning)

        second.kill9()
        let atKill = Self.locations(out)
        let third = try RunningDaemon(directory: directory)
        #expect(eventually(30) { !watch.isRunning }, "ends at --count")
        #expect(watch.terminationStatus == 0, "\(String(describing: try? String(contentsOfFile: err, encoding: .utf8)))")
        #expect(Self.locations(out) == 150)
        #expect(Self.locations(out) > atKill)
        let text = try String(contentsOfFile: out, encoding: .utf8)
        let notes = text.split(separator: "\n").filter { $0.contains("went away; connecting again") }
        #expect(notes.count == 2, "one line for each time the daemon went: \(notes)")
        withExtendedLifetime(third) {}
    }
}
