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
        // Bound, not listening: refused, and nobody else can take the port meanwhile.
        let (socket, port) = try LoopbackTCP.reservedPort()
        defer { close(socket) }
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
        // Asked again (at most five times) until gpsfake has played some of the receiver's reports: on a busy
        // machine it may not have within the first request's 3 s.
        var requests = 0
        repeat {
            requests += 1
            do {
                let location = try await source.currentLocation(timeout: .seconds(3))
                Issue.record("skytraq never fixes, yet got \(location)")
            } catch {
                #expect(error.code == .noFix, "\(error)")
            }
        } while source.messagesRead <= 5 && requests < 5
        // gpsd's greeting is at most five messages (VERSION, DEVICES, WATCH, a DEVICE when the receiver is
        // activated and another once its driver is known); more are the receiver's own reports (TPVs of mode
        // 1, GSTs), read and found without a fix: not a gpsd, or a gpsfake, that sent nothing.
        #expect(source.messagesRead > 5, "the receiver's reports were read: \(source.messagesRead) messages")
    }

    @Test(.timeLimit(.minutes(1)), .enabled(if: GPSFake.isAvailable, GPSFake.missing), .enabled(if: TestData.gpsdFolder != nil, TestData.missing))
    func firstFixFromARealGPSDAndFromOneDevice() async throws {
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
    }

    /// A scripted gpsd sends epochs with known `eph` values: with no fix meeting the goal, the one returned
    /// at the timeout is the most accurate of them, not merely a later one; with a goal that one meets, it
    /// is returned at once.
    @Test(.timeLimit(.minutes(1)))
    func bestWithinTimeoutIsTheMostAccurateSeen() async throws {
        // One epoch a 100 ms; the 8 m fix is neither the first nor the last.
        let accuracies = [30.0, 25.0, 8.0, 40.0, 12.0, 50.0]
        let epochs = accuracies.enumerated().map { index, eph in
            GPSDLines.tpv(index * 100, extra: #","eph":\#(eph)"#) + "\n"
        }
        let server = try FakeGPSDServer(
            steps: [.text(GPSDLines.greeting)] + epochs.flatMap { [.text($0), .pause(.milliseconds(100))] },
            ending: .stayOpen)
        defer { server.stop() }
        let source = try GPSDLocationSource(configuration: GPSDConfiguration(
            host: "127.0.0.1", port: server.port, epochSettle: .milliseconds(50)))

        let best = try await source.currentLocation(desiredAccuracy: 0.001, timeout: .seconds(3))
        #expect(best.horizontalAccuracy == 8)
        #expect(GPSDLines.milliseconds(best) == 200, "the 8 m epoch's own fix")
        #expect(best.latitude == GPSDLines.latitude(200))

        // A goal of 26 m: the first fix that meets it (25 m) ends the wait.
        // (A source of its own: one source never delivers a fix time twice.)
        let another = try GPSDLocationSource(configuration: GPSDConfiguration(
            host: "127.0.0.1", port: server.port, epochSettle: .milliseconds(50)))
        let good = try await another.currentLocation(desiredAccuracy: 26, timeout: .seconds(3))
        #expect(good.horizontalAccuracy == 25)
        #expect(GPSDLines.milliseconds(good) == 100)
    }
}
