import Foundation
import LocationCore
import Testing
@testable import LocationGPSD

/// Reduced (duty-cycled) acquisition against a real gpsd: it must really read less.
@Suite("gpsd duty cycling", .enabled(if: GPSFake.isAvailable, GPSFake.missing))
struct DutyCycleTests {
    @Test(.timeLimit(.minutes(1)))
    func reducedReadsASmallFractionOfHigh() async throws {
        // A generated 10 Hz feed replayed five times faster than real time (0.01 s per sentence, two
        // sentences per epoch): 50 epochs a second for 40 s, so a few seconds hold many epochs.
        let feed = try SyntheticFeed.write(epochs: 2_000, rateHz: 10)
        defer { try? FileManager.default.removeItem(at: feed) }
        let fake = try GPSFake(log: feed, cycle: 0.01)
        defer { fake.stop() }
        try await fake.waitUntilAccepting()
        let configuration = GPSDConfiguration(host: "127.0.0.1", port: fake.port, epochSettle: .milliseconds(300))
        let high = try GPSDLocationSource(configuration: configuration)
        let highRecorder = EventRecorder(mode: .continuous)
        highRecorder.start(high)
        // The continuous client also keeps gpsd's device open for the whole test.
        let flowing = await highRecorder.wait(timeout: .seconds(20)) { !$0.locations.isEmpty }
        try #require(flowing, "the feed is running")

        let reduced = try GPSDLocationSource(configuration: configuration)
        let cycle = DutyCycle(interval: .seconds(4), desiredAccuracy: nil, acquisitionTimeout: .seconds(2))
        let reducedRecorder = EventRecorder(mode: .dutyCycled(cycle))
        let highAtStart = high.messagesRead
        reducedRecorder.start(reduced)

        // While resting the reduced source has no connection: its count must not move.
        let rested = await reducedRecorder.wait(timeout: .seconds(10)) { $0.statuses.contains(.resting) }
        #expect(rested, "the first acquisition ends and the source rests")
        let atRest = reduced.messagesRead
        let statusesAtRest = reducedRecorder.statuses.count
        try await Task.sleep(for: .seconds(1))
        let afterRest = reduced.messagesRead
        try await Task.sleep(for: .milliseconds(100))
        // Unless a slow machine already began the next acquisition, nothing was read.
        if !reducedRecorder.statuses.dropFirst(statusesAtRest).contains(.connecting) {
            #expect(afterRest == atRest, "nothing is read between acquisitions")
        }

        let cycled = await reducedRecorder.wait(timeout: .seconds(30)) { $0.locations.count >= 3 }
        #expect(cycled, "one fix per interval")
        let highCount = high.messagesRead - highAtStart
        let reducedCount = reduced.messagesRead
        await reducedRecorder.stop()
        await highRecorder.stop()

        let acquisitions = reducedRecorder.locations.count
        #expect(highCount > 0)
        let ratio = Double(reducedCount) / Double(max(highCount, 1))
        #expect(ratio < 0.25, "reduced read \(reducedCount) messages, high \(highCount)")
        print("duty cycling: reduced read \(reducedCount) messages for \(acquisitions) fixes, high \(highCount) (\(Int(ratio * 100)) %)")
        let times = reducedRecorder.locations.map(\.timestamp)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "every acquisition delivers a new fix")
    }

    @Test(.timeLimit(.minutes(1)))
    func switchesModesWhileRunning() async throws {
        let feed = try SyntheticFeed.write(epochs: 2_000, rateHz: 10)
        defer { try? FileManager.default.removeItem(at: feed) }
        let fake = try GPSFake(log: feed, cycle: 0.01)
        defer { fake.stop() }
        try await fake.waitUntilAccepting()
        let source = try GPSDLocationSource(configuration: GPSDConfiguration(
            host: "127.0.0.1", port: fake.port, epochSettle: .milliseconds(300)))
        let recorder = EventRecorder(mode: .continuous)
        recorder.start(source)
        let streaming = await recorder.wait(timeout: .seconds(20)) { $0.locations.count >= 10 }
        try #require(streaming, "continuous fixes flow")

        let cycle = DutyCycle(interval: .seconds(3), desiredAccuracy: nil, acquisitionTimeout: .seconds(2))
        let beforeReduced = recorder.events.count
        recorder.context.setMode(.dutyCycled(cycle))
        let rested = await recorder.wait(timeout: .seconds(10)) { recorder in
            recorder.events.dropFirst(beforeReduced).contains(.status(.resting))
        }
        #expect(rested, "the source switched to duty-cycled acquisitions")
        let reducedFixes = recorder.events.dropFirst(beforeReduced).filter { if case .location = $0 { true } else { false } }
        #expect(reducedFixes.count <= 3, "a duty-cycled acquisition delivers one fix, not a stream: \(reducedFixes.count)")

        let beforeHigh = recorder.locations.count
        recorder.context.setMode(.continuous)
        let again = await recorder.wait(timeout: .seconds(20)) { $0.locations.count >= beforeHigh + 10 }
        await recorder.stop()
        #expect(again, "continuous fixes flow again")
        let times = recorder.locations.map(\.timestamp)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "no fix repeated across mode changes")
        #expect(recorder.errors.isEmpty, "\(recorder.errors)")
    }
}
