import Dispatch
import Foundation
import LocationCore
import LocationTesting
import Testing
@testable import LocationGPSD

/// A consumer that blocks must never stall the reader (gpsd drops clients that stop reading) nor make the
/// backlog grow without bound; what it misses is counted and reported.
@Suite("gpsd source with a slow consumer")
struct SlowConsumerTests {
    @Test("a busy consumer loses only the oldest waiting fixes, never a status, and is told how many")
    func relayDropsTheOldestFixesAndSaysSo() async throws {
        let gate = DispatchSemaphore(value: 0)
        let received = Locked<[LocationSourceEvent]>([])
        let dropCount = Locked(0)
        let relay = GPSDReportRelay(capacity: 3, endpoint: "127.0.0.1:1") { dropCount.withLock { $0 += 1 } }
        let (finished, finishedContinuation) = AsyncStream.makeStream(of: Void.self)
        relay.start(
            sink: { event in
                let first = received.withLock { events -> Bool in
                    events.append(event)
                    return events.count == 1
                }
                // The consumer is stuck on its first report until the test lets it go.
                if first { gate.wait() }
            },
            finished: { finishedContinuation.finish() })
        relay.submit(.location(LocationFixtures.walk(0)))
        #expect(await poll { received.value.count == 1 }, "the consumer took the first fix and is stuck")

        for index in 1...5 { relay.submit(.location(LocationFixtures.walk(index))) }
        relay.submit(.status(.noFix))
        for index in 6...10 { relay.submit(.location(LocationFixtures.walk(index))) }
        #expect(dropCount.value == 8, "at most 3 reports wait: fixes 1 to 8 are dropped as they are pushed out")

        gate.signal()
        relay.finish()
        for await _ in finished {}
        let events = received.value
        #expect(events.count == 5)
        guard events.count == 5 else { return }
        #expect(events[0] == .location(LocationFixtures.walk(0)))
        guard case .error(let overrun) = events[1] else {
            Issue.record("expected the overrun error second, got \(events[1])")
            return
        }
        #expect(overrun.code == .consumerOverrun)
        #expect(overrun.message.contains("dropped 8 fixes"), "\(overrun.message)")
        #expect(Array(events[2...]) == [
            .status(.noFix), .location(LocationFixtures.walk(9)), .location(LocationFixtures.walk(10)),
        ], "the status survives and the newest fixes follow in order")
    }

    @Test(
        "a consumer blocked for a long time does not stop the reader, and then gets every epoch in order",
        .enabled(if: GPSFake.isAvailable, GPSFake.missing), .enabled(if: TestData.gpsdFolder != nil, TestData.missing), .timeLimit(.minutes(2)))
    func blockedConsumerAgainstARealGPSD() async throws {
        let name = "ublox-neo-m9n-nmea.log"
        let expected = try TestData.expectedFixes(name)
        let fake = try GPSFake(log: TestData.log(name)!, cycle: 0.01)
        defer { fake.stop() }
        try await fake.waitUntilAccepting()
        let source = try GPSDLocationSource(configuration: GPSDConfiguration(
            host: "127.0.0.1", port: fake.port, watchdogTimeout: .seconds(3), epochSettle: .seconds(1)))
        let gate = DispatchSemaphore(value: 0)
        let blocked = Locked(false)
        let recorder = EventRecorder { event in
            guard case .location = event else { return }
            let first = blocked.withLock { isBlocked -> Bool in
                defer { isBlocked = true }
                return !isBlocked
            }
            if first { gate.wait() }
        }
        recorder.start(source)
        defer { Task { await recorder.stop() } }

        #expect(await recorder.wait(timeout: .seconds(20)) { $0.locations.count == 1 }, "the first fix arrives")
        // While the consumer is stuck, the reader goes on draining gpsd: a hundred more messages are read.
        let readAtBlock = source.messagesRead
        let drained = await recorder.wait(timeout: .seconds(30)) { _ in source.messagesRead >= readAtBlock + 100 }
        #expect(drained, "the reader kept reading while the consumer was blocked (\(source.messagesRead - readAtBlock) messages)")
        #expect(recorder.locations.count == 1, "nothing reached the blocked consumer meanwhile")
        gate.signal()

        let last = try #require(expected.last)
        let finished = await recorder.wait(timeout: .seconds(60)) { recorder in
            recorder.locations.contains { abs($0.timestamp.timeIntervalSince(last.time)) < 0.001 }
        }
        await recorder.stop()
        #expect(finished, "the last epoch arrives")
        let delivered = recorder.locations
        let times = delivered.map(\.timestamp)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "in order, none twice")
        let firstDelivered = times.first ?? .distantFuture
        let missing = expected.filter { fix in
            fix.time > firstDelivered && !delivered.contains { abs($0.timestamp.timeIntervalSince(fix.time)) < 0.001 }
        }
        #expect(missing.isEmpty, "\(missing.count) epochs lost while the consumer was blocked")
        #expect(source.fixesDropped == 0)
        // After the capture's end gpsd goes quiet and the watchdog may fire: only errors before the last
        // epoch count.
        let events = recorder.events
        let lastFix = events.lastIndex { if case .location = $0 { true } else { false } } ?? events.endIndex
        let outageCodes: Set<LocationError.Code> = [.sourceFailed, .sourceUnavailable, .consumerOverrun]
        let errors: [LocationError] = events[..<lastFix].compactMap { event in
            if case .error(let error) = event { error } else { nil }
        }
        let failures = errors.filter { outageCodes.contains($0.code) }
        #expect(failures.isEmpty, "gpsd kept us: no outage while the consumer was blocked, got \(failures)")
        print("slow consumer: \(delivered.count) epochs delivered, \(source.messagesRead) messages read")
    }

    @Test("a relay capacity below 1 is refused")
    func capacityIsValidated() {
        #expect(throws: LocationError(.invalidConfiguration, "maximumPendingReports must be at least 1, got 0")) {
            try GPSDLocationSource(configuration: GPSDConfiguration(maximumPendingReports: 0))
        }
    }

    private func poll(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<2_000 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return condition()
    }
}
