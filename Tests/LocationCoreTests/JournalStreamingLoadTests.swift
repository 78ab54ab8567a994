import Foundation
import LocationCore
import LocationTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Opening a journal reads it through a bounded window: its size never decides the memory it costs, and
/// records that straddle the window's edges read as any other.
@Suite("Journal file: streaming load", .serialized)
struct JournalStreamingLoadTests {
    /// The bytes of each record of `fixes`, as the journal writes them.
    static func records(_ fixes: [Location]) -> [[UInt8]] {
        fixes.map { fix in
            var bytes: [UInt8] = []
            LocationJournal.encodeRecord(fix, into: &bytes)
            return bytes
        }
    }

    /// This process's peak resident memory since the last reset (VmHWM), in bytes.
    static func peakResidentBytes() throws -> Int {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") })
        let kilobytes = try #require(line.split(separator: " ").dropFirst().first.flatMap { Int($0) })
        return kilobytes * 1024
    }

    /// Sets the peak back to the current resident memory (`echo 5 > /proc/self/clear_refs`).
    static func resetPeakResident() throws {
        try Data("5".utf8).write(to: URL(fileURLWithPath: "/proc/self/clear_refs"))
    }

    @Test("a 128 MiB journal whose tail is zeros (a sparse file) opens in constant memory and keeps its records")
    func sparseJournalCostsConstantMemory() throws {
        let directory = TemporaryDirectory()
        let fixes = LocationFixtures.walk(count: 50)
        let path = try directory.journal(holding: fixes)
        let recordsEnd = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        let size = 128 << 20
        #expect(truncate(path, off_t(size)) == 0)

        try Self.resetPeakResident()
        let before = try Self.peakResidentBytes()
        var loaded = 0
        let (journal, summary) = try LocationJournal.open(path: path) { _ in loaded += 1 }
        let growth = try Self.peakResidentBytes() - before
        journal.close()

        // Reading the whole file into memory, as before, grew the peak by its size (128 MiB).
        #expect(growth < 16 << 20, "peak resident memory grew by \(growth >> 20) MiB")
        #expect(loaded == 50)
        #expect(summary.count == 50)
        #expect(
            summary.problem?.message
                == "journal \(path): impossible record length 0 at byte \(recordsEnd); kept 50 fixes, dropped \(size - recordsEnd) bytes")
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int == recordsEnd, "the zeros are cut off")
    }

    @Test("records across the 1 MiB read window's edges: a damaged one there is skipped, every other kept, the journal rewritten byte for byte")
    func damageAtTheWindowEdges() throws {
        let directory = TemporaryDirectory()
        let fixes = LocationFixtures.walk(count: 40_000)
        let path = try directory.journal(holding: fixes)
        let records = Self.records(fixes)
        var starts: [Int] = []
        var offset = 8
        for record in records {
            starts.append(offset)
            offset += record.count
        }
        var data = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(data.count == offset && data.count > 3 << 20, "\(data.count) bytes")
        // The records that straddle the first and second window edge, and one well inside.
        let straddling = [1 << 20, 2 << 20].map { edge in starts.lastIndex { $0 < edge }! }
        let damagedIndexes = straddling + [12_345]
        for index in damagedIndexes { data[starts[index] + records[index].count - 5] ^= 0x10 }
        try data.write(to: URL(fileURLWithPath: path))

        let (journal, contents) = try LocationJournal.open(path: path)
        journal.close()
        let kept = fixes.indices.filter { !damagedIndexes.contains($0) }
        #expect(contents.locations.count == kept.count)
        #expect(contents.locations == kept.map { fixes[$0] })
        let message = try #require(contents.problem?.message)
        let damagedBytes = damagedIndexes.map { records[$0].count }.reduce(0, +)
        #expect(
            message
                == "journal \(path): checksum mismatch at byte \(starts[straddling[0]]); skipped \(damagedBytes) damaged bytes in 3 places "
                + "and kept \(kept.count) fixes, those after the damage included; the damaged bytes are saved in \(path).damaged")
        let rewritten = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(rewritten == Data(Array("LOCJRNL1".utf8) + kept.flatMap { records[$0] }))
        let saved = try Data(contentsOf: URL(fileURLWithPath: path + ".damaged"))
        #expect(saved == Data(damagedIndexes.sorted().flatMap { index in data[starts[index]..<(starts[index] + records[index].count)] }))
    }

    @Test("an empty journal file (a crash before its header was written) gets a header, and what is appended reads back")
    func emptyFileGetsAHeader() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("held.journal")
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        let fixes = LocationFixtures.walk(count: 3)
        do {
            let (journal, contents) = try LocationJournal.open(path: path)
            #expect(contents.locations.isEmpty)
            #expect(contents.problem == nil)
            try journal.append(contentsOf: fixes)
            journal.close()
        }
        let (journal, contents) = try LocationJournal.open(path: path)
        journal.close()
        #expect(contents.problem == nil)
        #expect(contents.locations == fixes)
        #expect(!FileManager.default.fileExists(atPath: path + ".corrupt"))
    }

    @Test("a journal holding more fixes than the batch's capacity loads the newest into the manager, counts the rest, and delivers them")
    func loadIsBoundedByTheBatchCapacity() async throws {
        let directory = TemporaryDirectory()
        let fixes = LocationFixtures.walk(count: 1_000)
        let path = try directory.journal(holding: fixes)
        try await serially {
            let h = try Harness(configuration: .init(batchCapacity: 100, journalPath: path), launch: nil)
            #expect(h.manager.heldCount == 100)
            #expect(h.manager.droppedCount == 900)
            try h.application.transition(to: .active)
            #expect(h.delegate.deliveries == [Array(fixes.suffix(100))])
        }
    }
}

/// What cannot be a journal is refused before anything is made beside it.
@Suite("Journal file: what is refused")
struct JournalRefusalTests {
    @Test("a journal with a second name (a hard link) is refused, since the lock is per name; nothing is left beside it")
    func hardLinkIsRefused() throws {
        let directory = TemporaryDirectory()
        let path = try directory.journal(holding: LocationFixtures.walk(count: 3))
        let other = directory.file("other.journal")
        #expect(link(path, other) == 0)
        #expect(throws: LocationError(
            .journalIO,
            "cannot use journal \(other): it has 2 names (hard links), so another daemon could open it under another name; a journal has one owner: give it one name"
        )) { try LocationJournal.open(path: other) }
        #expect(!FileManager.default.fileExists(atPath: other + ".lock"))
    }

    @Test("a directory as journal is refused without a lock file beside it")
    func directoryLeavesNoLockFile() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("dir.journal")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        #expect(throws: LocationError(.journalIO, "cannot use journal \(path): it is a directory")) { try LocationJournal.open(path: path) }
        #expect(!FileManager.default.fileExists(atPath: path + ".lock"))
    }

    @Test("damage saved by an earlier recovery is kept: a new one is added after it")
    func earlierDamageIsKept() throws {
        let directory = TemporaryDirectory()
        let fixes = LocationFixtures.walk(count: 10)
        let path = try directory.journal(holding: fixes)
        try Data("earlier damage".utf8).write(to: URL(fileURLWithPath: path + ".damaged"))
        var data = try Data(contentsOf: URL(fileURLWithPath: path))
        let recordSize = (data.count - 8) / 10
        data[8 + recordSize * 3 + 20] ^= 0x40
        try data.write(to: URL(fileURLWithPath: path))
        let (journal, contents) = try LocationJournal.open(path: path)
        journal.close()
        #expect(contents.locations.count == 9)
        let saved = try Data(contentsOf: URL(fileURLWithPath: path + ".damaged"))
        #expect(saved == Data("earlier damage".utf8) + data[(8 + recordSize * 3)..<(8 + recordSize * 4)])
    }
}
