import Foundation
import GPSDTestSupport
import LocationCore
import LocationTesting
import Testing
@testable import LocationGPSD

#if canImport(Glibc)
import Glibc
#endif

/// The source against a real gpsd that dies, comes back, or stalls.
@Suite("gpsd outages", .enabled(if: GPSFake.isAvailable, GPSFake.missing))
struct ResilienceTests {
    static func configuration(port: Int, watchdog: Duration = .seconds(3)) -> GPSDConfiguration {
        GPSDConfiguration(
            host: "127.0.0.1", port: port, reconnectDelay: .milliseconds(100),
            maximumReconnectDelay: .milliseconds(800), watchdogTimeout: watchdog, epochSettle: .milliseconds(300))
    }

    @Test(.timeLimit(.minutes(1)))
    func recoversWhenGPSDIsKilledAndRestarted() async throws {
        // The first gpsd's fixes are from 2024, the second's from 2033: the second gpsd's fixes are on
        // another timeline, which the source confirms, delivers and reports. Both feeds are generated and a
        // minute long: gpsfake plays a capture on its own clock whether or not anyone watches, so a real
        // capture of 8 to 13 s could be over before the source, slowed by a sanitizer, had watched long
        // enough (the real captures are ReplayTests' business).
        let firstFeed = try SyntheticFeed.write(epochs: 600, rateHz: 10, year: 2024)
        let secondFeed = try SyntheticFeed.write(epochs: 600, rateHz: 10, year: 2033)
        defer { for feed in [firstFeed, secondFeed] { try? FileManager.default.removeItem(at: feed) } }
        let first = try GPSFake(log: firstFeed, cycle: 0.05)
        defer { first.stop() }
        try await first.waitUntilAccepting()
        let source = try GPSDLocationSource(configuration: Self.configuration(port: first.port))
        let recorder = EventRecorder()
        recorder.start(source)
        defer { Task { await recorder.stop() } }

        let streaming = await recorder.wait(timeout: .seconds(20)) { $0.locations.count >= 10 }
        try #require(streaming, "fixes flow from the first gpsd")
        #expect(first.signalDaemon(SIGKILL), "gpsd was found and killed")
        _ = await first.waitForExit(timeout: .seconds(10))
        first.stop()
        let noticed = await recorder.wait(timeout: .seconds(10)) { !$0.errors.isEmpty }
        #expect(noticed, "the outage is reported")
        let deliveredBefore = recorder.locations.count

        // Let a few reconnection attempts fail before gpsd comes back.
        try await Task.sleep(for: .seconds(1))
        let second = try GPSFake(log: secondFeed, port: first.port, cycle: 0.05)
        defer { second.stop() }
        try await second.waitUntilAccepting()
        let clock = ContinuousClock()
        let back = clock.now
        let recovered = await recorder.wait(timeout: .seconds(20)) { $0.locations.count >= deliveredBefore + 5 }
        let recoveryTime = back.duration(to: clock.now)
        await recorder.stop()

        #expect(recovered, "fixes flow again from the restarted gpsd without any help")
        let errors = recorder.errors
        // One error for the outage, and one for the receiver's clock: the second gpsd's fixes are 9 years
        // later than the first's while only seconds passed, a jump confirmed by the fixes that follow it.
        #expect(errors.map(\.code) == [.sourceFailed, .clockJump], "\(errors)")
        #expect(errors.last?.message.contains("clock jumped forward from 2024-05-01") == true, "\(errors)")
        let events = recorder.events
        let errorIndex = events.firstIndex { if case .error = $0 { true } else { false } } ?? 0
        #expect(events[errorIndex...].contains(.status(.unavailable)) || events[..<errorIndex].contains(.status(.unavailable)))
        #expect(events[errorIndex...].contains(.status(.hasFix)), "recovery is announced")
        let times = recorder.locations.map(\.timestamp)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "no fix is delivered twice or out of order")
        print("gpsd restart: first fix \(recoveryTime) after gpsd accepted again (includes gpsfake start-up)")
    }

    /// gpsd frozen with SIGSTOP: its socket stays open and silent, so only the watchdog can notice. It
    /// must report the outage once, within its timeout of the freeze, and fixes must flow again, in
    /// order, within the reconnection cap + 1 s of SIGCONT.
    @Test(.timeLimit(.minutes(1)))
    func watchdogFiresWhenGPSDIsStopped() async throws {
        // A steady 10 Hz receiver (two sentences per epoch, one every 50 ms): gpsd reports every 100 ms,
        // so the freeze's start is known to 0.1 s, and resumption does not wait for a slow epoch.
        let feed = try SyntheticFeed.write(epochs: 1_000, rateHz: 10)
        defer { try? FileManager.default.removeItem(at: feed) }
        let fake = try GPSFake(log: feed, cycle: 0.05)
        defer { fake.stop() }
        try await fake.waitUntilAccepting()
        let configuration = Self.configuration(port: fake.port, watchdog: .seconds(1))
        let source = try GPSDLocationSource(configuration: configuration)
        let recorder = EventRecorder()
        recorder.start(source)
        defer { Task { await recorder.stop() } }

        let streaming = await recorder.wait(timeout: .seconds(20)) { $0.locations.count >= 5 }
        try #require(streaming, "fixes flow before gpsd is stopped")
        // Start-up pauses of gpsfake may already have tripped the 1 s watchdog; count from here.
        let earlier = recorder.errors.count
        let clock = ContinuousClock()
        let stopped = clock.now
        #expect(fake.signalDaemon(SIGSTOP), "gpsd was found and stopped")
        let fired = await recorder.wait(timeout: .seconds(10)) { $0.errors.count > earlier }
        let noticed = stopped.duration(to: clock.now)
        #expect(fired, "the watchdog notices a silent gpsd")
        // The last report came at most 100 ms before the freeze; the recorder looks every 25 ms; the
        // rest is slack for a loaded machine.
        #expect(noticed >= configuration.watchdogTimeout - .milliseconds(250), "not before its timeout: \(noticed)")
        // Upper bounds measure speed, which a sanitizer slows several times over: printed, not asserted there.
        if Sanitizer.speedUnderLoadIsMeaningful {
            #expect(noticed <= configuration.watchdogTimeout + .seconds(1), "within its timeout: \(noticed)")
        }
        // While gpsd stays stopped, reconnections (accepted by the kernel, unanswered) time out again and
        // again, but the outage is one.
        try await Task.sleep(for: .seconds(2.5))
        let errors = recorder.errors.dropFirst(earlier)
        #expect(errors.count == 1, "one error per outage, got \(errors)")
        #expect(errors.first?.code == .sourceFailed)
        #expect(
            errors.first?.message == "gpsd at 127.0.0.1:\(fake.port) sent nothing for 1 s (stalled gpsd or receiver); reconnecting",
            "\(errors)")
        #expect(recorder.statuses.last == .unavailable)

        let deliveredBefore = recorder.locations.count
        let continued = clock.now
        #expect(fake.signalDaemon(SIGCONT))
        let resumed = await recorder.wait(timeout: .seconds(20)) { $0.locations.count > deliveredBefore }
        let resumedAfter = continued.duration(to: clock.now)
        #expect(resumed, "fixes flow again once gpsd continues")
        if Sanitizer.speedUnderLoadIsMeaningful {
            #expect(
                resumedAfter <= configuration.maximumReconnectDelay + .seconds(1),
                "first fix \(resumedAfter) after SIGCONT")
        }
        // A few more, to see the stream is steady again and nothing more is reported.
        await recorder.wait(timeout: .seconds(10)) { $0.locations.count >= deliveredBefore + 5 }
        await recorder.stop()
        #expect(recorder.locations.count >= deliveredBefore + 5)
        #expect(recorder.errors.count == earlier + 1)
        #expect(recorder.statuses.last == .hasFix, "recovery is announced")
        let times = recorder.locations.map(\.timestamp)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "no fix is delivered twice or out of order")
        print("gpsd frozen: watchdog reported it after \(noticed); first fix \(resumedAfter) after SIGCONT")
    }

    @Test(.timeLimit(.minutes(1)), .enabled(if: TestData.gpsdFolder != nil, TestData.missing))
    func reportsFixLossAndRecoveryFromTheReceiver() async throws {
        // quectel goes fix -> no fix -> fix (the shared replay of it).
        let events = try await CaptureReplays.shared.replay("quectel.log").events
        let lost = events.firstIndex { if case .error(let error) = $0 { error.code == .fixLost } else { false } }
        try #require(lost != nil, "the fix loss is reported")
        #expect(events[..<lost!].last == .status(.noFix), "no-fix status precedes the fix-lost error")
        #expect(events[lost!...].contains(.status(.hasFix)), "the fix coming back is reported")
        let after = events[lost!...].compactMap { if case .location(let location) = $0 { location } else { nil } }
        #expect(!after.isEmpty, "fixes are delivered again")
    }
}
