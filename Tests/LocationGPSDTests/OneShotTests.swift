import Foundation
import GPSDTestSupport
import LocationCore
import Testing
@testable import LocationGPSD

/// The one-shot position used by the CLI.
@Suite("gpsd one-shot position")
struct OneShotTests {
    @Test(.timeLimit(.minutes(1)))
    func unreachableGPSDIsSourceUnavailable() async throws {
        let port = try LoopbackTCP.freePort()
        let source = try GPSDLocationSource(configuration: GPSDConfiguration(host: "127.0.0.1", port: port))
        do {
            let location = try await source.currentLocation(timeout: .seconds(30))
            Issue.record("got \(location) from nothing")
        } catch {
            #expect(error.code == .sourceUnavailable, "\(error)")
            #expect(error.message.contains("127.0.0.1:\(port)"))
        }
    }

    @Test(.timeLimit(.minutes(1)), .enabled(if: GPSFake.isAvailable, GPSFake.missing), .enabled(if: TestData.gpsdFolder != nil, TestData.missing))
    func receiverWithoutFixIsNoFix() async throws {
        let fake = try GPSFake(log: TestData.log("skytraq.log")!)
        defer { fake.stop() }
        try await fake.waitUntilAccepting()
        let source = try GPSDLocationSource(configuration: GPSDConfiguration(host: "127.0.0.1", port: fake.port))
        do {
            let location = try await source.currentLocation(timeout: .seconds(3))
            Issue.record("skytraq never fixes, yet got \(location)")
        } catch {
            #expect(error.code == .noFix, "\(error)")
        }
        #expect(source.messagesRead > 0, "gpsd was reached")
    }

    @Test(.timeLimit(.minutes(1)), .enabled(if: GPSFake.isAvailable, GPSFake.missing), .enabled(if: TestData.gpsdFolder != nil, TestData.missing))
    func firstFixAndBestWithinTimeout() async throws {
        let fake = try GPSFake(log: TestData.log("haicom-305N.log")!)
        defer { fake.stop() }
        try await fake.waitUntilAccepting()
        let source = try GPSDLocationSource(configuration: GPSDConfiguration(host: "127.0.0.1", port: fake.port))
        let first = try await source.currentLocation(desiredAccuracy: nil, timeout: .seconds(20))
        #expect(first.hasValidCoordinate)
        #expect(first.source?.hasPrefix("/dev/") == true)
        let expected = try TestData.expectedFixes("haicom-305N.log")
        let match = expected.first { abs($0.time.timeIntervalSince(first.timestamp)) < 0.001 }
        #expect(match.map { abs($0.latitude - first.latitude) < 1e-7 } == true, "the fix is one gpsd reported")

        // Watching that one device by its path gives the same receiver's fixes.
        let devicePath = try #require(first.source)
        let oneDevice = try GPSDLocationSource(configuration: GPSDConfiguration(
            host: "127.0.0.1", port: fake.port, devicePath: devicePath))
        #expect(oneDevice.name == "gpsd 127.0.0.1:\(fake.port) \(devicePath)")
        let fromDevice = try await oneDevice.currentLocation(timeout: .seconds(10))
        #expect(fromDevice.source == devicePath)

        // Nothing meets a 1 mm goal: the best fix seen within the timeout comes back instead.
        let best = try await source.currentLocation(desiredAccuracy: 0.001, timeout: .seconds(3))
        #expect(best.timestamp > first.timestamp, "a later, new fix")
        #expect((best.horizontalAccuracy ?? 0) > 0.001)
    }
}
