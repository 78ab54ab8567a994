import Clocks
import ConcurrencyExtras
import Foundation
import LocationCore
import LocationTesting
import Testing

@Suite("LocationManager: suspended batching and the journal", .serialized)
struct SuspendedBatchingTests {
    static let everyTenSeconds = ReducedAccuracyPolicy(
        interval: .seconds(10), desiredAccuracy: nil, acquisitionTimeout: .seconds(5))

    @Test("without background location mode nothing reaches the app from didEnterBackground on: every reduced fix is held")
    func holdsFromDidEnterBackground() async throws {
        try await serially {
            let h = try Harness(configuration: .init(reduced: Self.everyTenSeconds))
            await h.start()
            await h.play(0..<3)
            let deliveredInForeground = h.delegate.locations.count
            #expect(deliveredInForeground == 3)
            try h.application.enterBackground()
            await h.settle()
            await h.play(3..<60)
            #expect(h.delegate.locations.count == deliveredInForeground, "no location reaches a background app without the mode")
            #expect(h.manager.heldCount == 6, "one reduced fix per 10 s acquisition, from the first moment in the background")
            try h.application.enterForeground()
            #expect(h.delegate.deliveries.last?.count == 6)
        }
    }

    @Test("with background location mode a suspended app gets its reduced fixes live, as iOS wakes it for each location event")
    func suspendedWithModeGetsLiveFixes() async throws {
        try await serially {
            let h = try Harness(configuration: .init(allowsBackgroundLocationUpdates: true, reduced: Self.everyTenSeconds))
            await h.start()
            try h.application.transition(to: .suspended)
            await h.settle()
            h.delegate.reset()
            await h.play(0..<60)
            #expect(h.application.applicationState == .suspended)
            #expect(h.delegate.deliveries.count == 6)
            #expect(h.manager.heldCount == 0)
        }
    }

    @Test("the held batch arrives as ONE call on willEnterForeground, oldest first, before any live fix")
    func flushOnForeground() async throws {
        try await serially {
            let h = try Harness(configuration: .init(reduced: Self.everyTenSeconds))
            await h.start()
            try h.application.transition(to: .suspended)
            await h.settle()
            // Fixes that arrive out of time order (a receiver replaying its buffer after a reconnect): the
            // batch is still delivered oldest first.
            for index in [30, 10, 40, 0, 20] {
                h.source.emit(LocationFixtures.walk(index))
                await Task.megaYield()
                await h.clock.advance(by: .seconds(10))
            }
            let held = h.manager.heldCount
            #expect(held == 5)
            h.delegate.reset()
            let observer = Task {
                var iterator = h.manager.updates.makeAsyncIterator()
                return await iterator.next()
            }
            await Task.megaYield()
            try h.application.enterForeground()
            // The batch is delivered synchronously inside willEnterForeground.
            #expect(h.delegate.deliveries.count == 1)
            let batch = try #require(h.delegate.deliveries.first)
            #expect(batch.count == held)
            #expect(batch.map(\.timestamp) == [0, 10, 20, 30, 40].map { LocationFixtures.walk($0).timestamp })
            #expect(await observer.value == batch)
            try h.application.becomeActive()
            await h.settle()
            await h.play(50..<52)
            #expect(h.delegate.deliveries.count == 3)
            #expect(h.delegate.deliveries[1] == [LocationFixtures.walk(50)])
            #expect(h.manager.heldCount == 0)
        }
    }

    @Test("duplicates (same time and position) that were not back to back are removed from the flushed batch")
    func duplicatesRemoved() async throws {
        try await serially {
            let h = try Harness(configuration: .init(reduced: .init(interval: .seconds(1), desiredAccuracy: nil)))
            await h.start()
            try h.application.transition(to: .suspended)
            await h.settle()
            // A receiver that repeats earlier fixes, never two alike in a row: the filter on consecutive
            // fixes lets each through, so only the batch's own de-duplication can remove them.
            for index in [0, 1, 0, 2, 1, 2] {
                h.source.emit(LocationFixtures.walk(index))
                await Task.megaYield()
                await h.clock.advance(by: .seconds(1))
            }
            #expect(h.manager.heldCount == 6, "all six reached the batch")
            try h.application.enterForeground()
            #expect(h.delegate.deliveries == [LocationFixtures.walk(count: 3)])
        }
    }

    @Test("overflow drops the oldest and tells the delegate how many, before the batch")
    func overflowReported() async throws {
        try await serially {
            let h = try Harness(configuration: .init(reduced: .init(interval: .seconds(1), desiredAccuracy: nil), batchCapacity: 4))
            await h.start()
            try h.application.transition(to: .suspended)
            await h.settle()
            await h.play(0..<10)
            #expect(h.manager.heldCount == 4)
            #expect(h.manager.droppedCount == 6)
            h.delegate.reset()
            try h.application.enterForeground()
            #expect(h.delegate.calls.first == .dropped(6))
            #expect(h.delegate.deliveries == [LocationFixtures.walk(count: 4, from: 6)])
        }
    }

    @Test("with background location mode the app is never suspended and gets live reduced fixes")
    func backgroundLocationMode() async throws {
        try await serially {
            let h = try Harness(configuration: .init(allowsBackgroundLocationUpdates: true, reduced: Self.everyTenSeconds))
            await h.start()
            try h.application.enterBackground()
            await h.settle()
            h.delegate.reset()
            await h.play(0..<60)
            #expect(h.application.applicationState == .background)
            #expect(h.delegate.deliveries.count == 6)
            #expect(h.manager.heldCount == 0)
            // Turning the mode off leaves nothing keeping the app running: it is suspended at once.
            h.manager.allowsBackgroundLocationUpdates = false
            #expect(h.application.applicationState == .suspended)
        }
    }

    @Test("a journal survives the manager being dropped without shutdown and is delivered exactly once")
    func journalSurvivesCrash() async throws {
        let directory = TemporaryDirectory()
        let path = directory.file("held.journal")
        let heldBeforeCrash = LocationFixtures.walk(count: 45).filter {
            Int($0.timestamp.timeIntervalSince(LocationFixtures.epoch)) % 10 == 0
        }
        try await serially {
            let h = try Harness(configuration: .init(reduced: Self.everyTenSeconds, journalPath: path))
            await h.start()
            try h.application.transition(to: .suspended)
            await h.settle()
            await h.play(0..<45)
            #expect(h.manager.heldCount == 5)
        }
        // The process "restarts" in the suspended state it had.
        try await serially {
            let h = try Harness(configuration: .init(journalPath: path), launch: .suspended)
            #expect(h.manager.heldCount == 5)
            try h.application.enterForeground()
            #expect(h.delegate.deliveries == [heldBeforeCrash])
            try h.application.becomeActive()
            #expect(h.delegate.deliveries.count == 1)
        }
        // A third start finds nothing left: exactly once.
        try await serially {
            let h = try Harness(configuration: .init(journalPath: path), launch: nil)
            #expect(h.manager.heldCount == 0)
            try h.application.transition(to: .active)
            #expect(h.delegate.deliveries.isEmpty)
        }
    }

    @Test("a journal restored at launch is delivered when the app launches straight into the foreground")
    func journalOnLaunch() async throws {
        let directory = TemporaryDirectory()
        let fixes = LocationFixtures.walk(count: 3)
        let path = try directory.journal(holding: fixes)
        try await serially {
            let h = try Harness(configuration: .init(journalPath: path), launch: nil)
            try h.application.transition(to: .active)
            #expect(h.delegate.deliveries == [fixes])
        }
    }

    @Test("a journal restored when the app is already active is delivered as one batch before the first newer live fix")
    func journalWhenAlreadyActive() async throws {
        let directory = TemporaryDirectory()
        let fixes = LocationFixtures.walk(count: 3)
        let path = try directory.journal(holding: fixes)
        try await serially {
            let h = try Harness(configuration: .init(journalPath: path), launch: .active)
            await h.start()
            #expect(h.delegate.deliveries.isEmpty)
            let live = LocationFixtures.walk(10)
            await h.emit(live)
            #expect(h.delegate.deliveries == [fixes, [live]])
            #expect(h.manager.heldCount == 0)
        }
    }

    @Test("a corrupt journal tail reaches the delegate and the valid prefix is delivered")
    func corruptJournalReported() async throws {
        let directory = TemporaryDirectory()
        let fixes = LocationFixtures.walk(count: 4)
        let path = try directory.journal(holding: fixes)
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.truncate(atOffset: try handle.seekToEnd() - 3)
        try handle.close()
        try await serially {
            let h = try Harness(configuration: .init(journalPath: path), launch: .suspended)
            #expect(h.delegate.errors.map(\.code) == [.journalCorrupt])
            try h.application.enterForeground()
            #expect(h.delegate.deliveries == [Array(fixes.prefix(3))])
        }
    }

    @Test("while suspended the journal file never holds more than twice the batch's capacity and 16, after any fix")
    func journalFileStaysBoundedAfterEveryFix() async throws {
        let directory = TemporaryDirectory()
        let path = directory.file("held.journal")
        try await serially {
            var largest = 0
            let h = try Harness(
                configuration: .init(reduced: .init(interval: .seconds(1), desiredAccuracy: nil), batchCapacity: 4, journalPath: path))
            await h.start()
            try h.application.transition(to: .suspended)
            await h.settle()
            for second in 0..<100 {
                await h.play(second..<second + 1)
                // A copy: the journal is locked by its owner.
                let copy = directory.file("copy-\(second).journal")
                try FileManager.default.copyItem(atPath: path, toPath: copy)
                let (journal, contents) = try LocationJournal.open(path: copy)
                journal.close()
                largest = max(largest, contents.locations.count)
            }
            #expect(h.manager.heldCount == 4)
            #expect(largest == 2 * 4 + 16, "the file reached \(largest) records")
        }
        let (_, contents) = try LocationJournal.open(path: path)
        #expect(contents.locations.suffix(4) == LocationFixtures.walk(count: 4, from: 96))
    }

    @Test("fixes held again right after a flush stay in the journal")
    func journalKeepsFixesAfterFlush() async throws {
        let directory = TemporaryDirectory()
        let path = directory.file("held.journal")
        try await serially {
            let h = try Harness(configuration: .init(reduced: Self.everyTenSeconds, journalPath: path))
            await h.start()
            try h.application.transition(to: .suspended)
            await h.settle()
            await h.play(0..<20)
            try h.application.enterForeground()
            try h.application.transition(to: .suspended)
            await h.settle()
            await h.play(20..<35)
            #expect(h.manager.heldCount == 2, "\(h.manager.heldCount)")
        }
        let (_, contents) = try LocationJournal.open(path: path)
        #expect(contents.locations.count == 2)
    }
}
