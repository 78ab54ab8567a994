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
        // The messages the reduced source had read at each of its status changes, and 300 ms and 1.3 s into
        // each rest (the acquisition's connection is closed by then, and a rest lasts at least the interval
        // less the acquisition timeout, 2 s). While resting it has no connection, so the count must not move
        // between the two looks. (At the next `connecting` the new connection may already have read gpsd's
        // greeting: status events reach the consumer through the delivery thread.)
        let readAtStatus = Locked<[StatusCount]>([])
        let reducedRecorder = EventRecorder(mode: .dutyCycled(cycle)) { event in
            guard case .status(let status) = event else { return }
            readAtStatus.withLock { $0.append(StatusCount(status: status, messagesRead: reduced.messagesRead)) }
            if status == .resting {
                for delay in [0.3, 1.3] {
                    DispatchQueue.global().asyncAfter(deadline: .now() + delay) {
                        readAtStatus.withLock { $0.append(StatusCount(status: nil, messagesRead: reduced.messagesRead)) }
                    }
                }
            }
        }
        let highAtStart = high.messagesRead
        reducedRecorder.start(reduced)

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
        #expect(times.count >= 3)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "every acquisition delivers a new fix")

        // Three acquisitions, so at least two rests that ended in a new acquisition, each looked at twice
        // before the next one began.
        let marks = readAtStatus.value
        var rests: [(early: Int, late: Int)] = []
        for index in marks.indices where marks[index].status == .resting {
            let after = marks[(index + 1)...]
            guard after.contains(where: { $0.status == .connecting }) else { continue }
            let looks = after.prefix { $0.status != .connecting }.filter { $0.status == nil }
            guard looks.count == 2 else {
                Issue.record("rest \(rests.count + 1) ended before it was looked at twice: \(marks)")
                continue
            }
            rests.append((looks[looks.startIndex].messagesRead, looks[looks.startIndex + 1].messagesRead))
        }
        #expect(rests.count >= 2, "\(marks)")
        for (number, rest) in rests.enumerated() {
            #expect(rest.late == rest.early, "rest \(number + 1): nothing is read between acquisitions")
        }
    }

    /// A status change (`nil`: 300 ms into a rest) and the messages read at that moment.
    struct StatusCount: Sendable {
        var status: LocationSourceStatus?
        var messagesRead: Int
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
