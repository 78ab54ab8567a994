import Foundation
import LocationCore
import Testing
@testable import LocationGPSD

#if canImport(Glibc)
import Glibc
#endif

/// The receiver's clock misbehaves under a real source: a stand-in gpsd with a week-rollover glitch, and a
/// real gpsd restarted on an earlier capture. The source is never silent for more than a few epochs.
@Suite("gpsd source: receiver clock jumps", .serialized)
struct ClockJumpTests {
    /// A TPV at `seconds` since 1970 (a whole second), latitude marking which fix it is.
    static func tpv(_ seconds: Int64, index: Int) -> String {
        var value = time_t(seconds)
        var parts = tm()
        gmtime_r(&value, &parts)
        let time = String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.000Z", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday, parts.tm_hour,
            parts.tm_min, parts.tm_sec)
        return #"{"class":"TPV","device":"/dev/ttyFAKE","mode":3,"time":"\#(time)","lat":\#(51.5 + Double(index) * 1e-4),"lon":-0.1,"eph":5.0}"#
    }

    @Test("a stand-in gpsd sends one TPV 1,024 weeks in the future among correct ones: every fix arrives, corrected, one clock-jump line", .timeLimit(.minutes(1)))
    func weekRolloverGlitchFromAStandIn() async throws {
        let start = Int64(Date().timeIntervalSince1970) - 30
        var steps: [FakeGPSDServer.Step] = [.text(GPSDLines.greeting)]
        for index in 0..<8 {
            let seconds = start + Int64(index) + (index == 2 ? ReceiverTimeline.era : 0)
            steps += [.text(Self.tpv(seconds, index: index) + "\n"), .pause(.milliseconds(150))]
        }
        let server = try FakeGPSDServer(steps: steps, ending: .stayOpen)
        defer { server.stop() }
        let source = try GPSDLocationSource(configuration: GPSDConfiguration(
            host: "127.0.0.1", port: server.port, watchdogTimeout: .seconds(5), epochSettle: .milliseconds(100)))
        let recorder = EventRecorder()
        recorder.start(source)
        let all = await recorder.wait(timeout: .seconds(20)) { $0.locations.count >= 8 }
        await recorder.stop()
        #expect(all, "\(recorder.locations.count) of 8 fixes delivered")
        let times = recorder.locations.map { Int64($0.timestamp.timeIntervalSince1970.rounded()) }
        #expect(times == (0..<8).map { start + Int64($0) })
        #expect(recorder.locations.map(\.latitude) == (0..<8).map { 51.5 + Double($0) * 1e-4 }, "the glitch fix is the third, kept with its position")
        let jumps = recorder.errors.filter { $0.code == .clockJump }
        #expect(jumps.count == 1)
        #expect(jumps.first?.message.contains("1024 weeks ahead of the present: a GPS week-number rollover") == true, "\(jumps)")
    }

    @Test(
        "a real gpsd restarted on an earlier capture (2024 → 2020): fixes resume within a few epochs, the jump back reported once",
        .enabled(if: GPSFake.isAvailable && TestData.gpsdFolder != nil, "needs gpsfake and ../shared/testdata/gpsd"), .timeLimit(.minutes(2)))
    func realGPSDRestartedOnAnEarlierCapture() async throws {
        // gpsfake plays its capture on its own clock, whether or not anyone watches, and gpsd drops what
        // comes before a client's WATCH: a short capture (haicom-305N's 17 s) could be over before a client
        // on a starved machine watched, and the first gpsd then fed nothing (seen once in CI). The first
        // gpsd reads a 60 s generated feed (2024) instead, which no start-up delay within the time limit
        // can outlast; the earlier capture it is restarted on is a real one (2020).
        let feed = try SyntheticFeed.write(epochs: 600, rateHz: 10)
        defer { try? FileManager.default.removeItem(at: feed) }
        let first = try GPSFake(log: feed, cycle: 0.05)
        defer { first.stop() }
        try await first.waitUntilAccepting()
        let source = try GPSDLocationSource(configuration: GPSDConfiguration(
            host: "127.0.0.1", port: first.port, reconnectDelay: .milliseconds(100), maximumReconnectDelay: .milliseconds(800),
            watchdogTimeout: .seconds(3), epochSettle: .milliseconds(300)))
        let recorder = EventRecorder()
        recorder.start(source)
        defer { Task { await recorder.stop() } }
        let streaming = await recorder.wait(timeout: .seconds(20)) { $0.locations.count >= 5 }
        try #require(
            streaming,
            "fixes flow from the first gpsd: \(recorder.locations.count) fixes, statuses \(recorder.statuses), errors \(recorder.errors)")
        #expect(first.signalDaemon(SIGKILL))
        _ = await first.waitForExit(timeout: .seconds(10))
        first.stop()
        let before = recorder.locations.count
        let lastBefore = try #require(recorder.locations.last?.timestamp)

        let second = try GPSFake(log: TestData.log("ublox-neo-m9n-nmea.log")!, port: first.port, cycle: 0.02)
        defer { second.stop() }
        try await second.waitUntilAccepting()
        let resumed = await recorder.wait(timeout: .seconds(40)) { $0.locations.count >= before + 5 }
        await recorder.stop()
        #expect(resumed, "fixes from the earlier capture are delivered (before: none until its time caught up)")
        let after = recorder.locations.dropFirst(before)
        #expect(after.allSatisfy { $0.timestamp < lastBefore }, "they are the earlier capture's")
        let afterTimes = after.map(\.timestamp)
        #expect(zip(afterTimes, afterTimes.dropFirst()).allSatisfy { $0 < $1 }, "in order, none twice")
        let jumps = recorder.errors.filter { $0.code == .clockJump }
        #expect(jumps.count == 1, "\(recorder.errors)")
        #expect(jumps.first?.message.contains("clock jumped back from 2024-05-01") == true, "\(jumps)")
        #expect(jumps.first?.message.contains("to 2020-07-11") == true, "\(jumps)")
    }
}
