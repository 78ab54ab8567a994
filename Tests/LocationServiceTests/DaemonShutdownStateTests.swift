import Foundation
import LocationControl
import LocationCore
import Testing

/// What a graceful stop of locationd saves: the states the apps were in, not those the stop itself causes.
@Suite("locationd's graceful stop saves the apps' states", .serialized)
struct DaemonShutdownStateTests {
    @Test("a background app with the background location mode comes back after SIGTERM, and after kill -9, running in the background, not suspended", .timeLimit(.minutes(1)))
    func statesSurviveAGracefulStop() throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.file("state"), withIntermediateDirectories: true)
        let extra = ["--journal", directory.file("state/held.journal")]
        let first = try RunningDaemon(directory: directory, extra: extra)
        #expect(try first.ctl(["state", "background", "--app", "logger", "--background-location", "on"]).status == 0)
        #expect(try first.appStatus("logger").state == .background)
        #expect(first.stop() == 0)

        let second = try RunningDaemon(directory: directory, extra: extra)
        #expect(try second.listedStatus("logger")?.state == .background, "\(String(describing: try? second.listedStatus("logger")?.state)) \(second.logText.suffix(1500))")
        second.kill9()
        let third = try RunningDaemon(directory: directory, extra: extra)
        #expect(try third.listedStatus("logger")?.state == .background, "\(third.logText.suffix(1500))")
    }
}
