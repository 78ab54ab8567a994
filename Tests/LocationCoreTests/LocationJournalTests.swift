import Clocks
import Foundation
import LocationCore
import LocationTesting
import Testing

/// A fresh temporary directory removed when the test ends.
final class TemporaryDirectory: Sendable {
    let path: String

    init() {
        path = NSTemporaryDirectory() + "location-tests-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    func file(_ name: String) -> String { path + "/" + name }

    /// Writes a journal named `held.journal` holding `fixes`; returns its path.
    func journal(holding fixes: [Location]) throws -> String {
        let path = file("held.journal")
        let (journal, _) = try LocationJournal.open(path: path)
        try journal.append(contentsOf: fixes)
        journal.close()
        return path
    }
}

@Suite("Journal file")
struct LocationJournalTests {
    @Test("appended fixes are read back exactly after the process that appended them is killed")
    func survivesReopen() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("held.journal")
        var fixes = LocationFixtures.walk(count: 500)
        fixes[3].hdop = 0.7
        fixes[3].vdop = 1.2
        fixes[4].pdop = 3.5
        // Another process appends them and is killed with SIGKILL while the journal is open: no close, no
        // sync, no deinit.
        let input = directory.file("fixes.json")
        try JSONEncoder().encode(fixes).write(to: URL(fileURLWithPath: input))
        let child = try JournalChild.appendAndKill(journal: path, locations: input)
        #expect(child.output == "appended 500\n", "\(child.error)")
        #expect(child.killed, "the child was killed by SIGKILL, not ended by itself")
        let (journal, contents) = try LocationJournal.open(path: path)
        #expect(contents.problem == nil)
        #expect(contents.locations == fixes)
        #expect(journal.count == 500)
        try journal.clear()
        journal.close()
        let (_, afterClear) = try LocationJournal.open(path: path)
        #expect(afterClear.locations.isEmpty)
    }

    @Test("replacing the records keeps exactly the new ones, appends continue after them, and no temporary file is left")
    func replaceContents() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("held.journal")
        let fixes = LocationFixtures.walk(count: 30)
        let (journal, _) = try LocationJournal.open(path: path)
        try journal.append(contentsOf: Array(fixes[0..<20]))
        // The first 20 were delivered; 20...24 were held meanwhile and must stay.
        try journal.replaceContents(with: Array(fixes[20..<25]))
        #expect(journal.count == 5)
        try journal.append(contentsOf: Array(fixes[25..<30]))
        #expect(!FileManager.default.fileExists(atPath: path + ".tmp"))
        #expect(try Self.readOnce(path).locations == Array(fixes[20..<30]))
        try journal.replaceContents(with: [])
        #expect(try Self.readOnce(path).locations.isEmpty)
    }

    /// What a journal file holds, read by a second owner while the first pauses (it closes its handle to
    /// let go of the lock, as a process that exits does; the first reopens it after).
    static func readOnce(_ path: String) throws -> LocationJournal.Contents {
        // The lock is per open file description: a reader in this process must wait its turn too.
        let copy = path + ".copy"
        try? FileManager.default.removeItem(atPath: copy)
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        defer { try? FileManager.default.removeItem(atPath: copy); try? FileManager.default.removeItem(atPath: copy + ".lock") }
        let (journal, contents) = try LocationJournal.open(path: copy)
        journal.close()
        #expect(contents.problem == nil)
        return contents
    }

    @Test("a truncated tail is reported, cut off, and the valid prefix kept", arguments: [1, 7, 40, 80])
    func truncatedTail(cut: Int) throws {
        let directory = TemporaryDirectory()
        let fixes = LocationFixtures.walk(count: 10)
        let path = try directory.journal(holding: fixes)
        var data = try Data(contentsOf: URL(fileURLWithPath: path))
        data.removeLast(cut)
        try data.write(to: URL(fileURLWithPath: path))
        let (journal, contents) = try LocationJournal.open(path: path)
        let problem = try #require(contents.problem)
        #expect(problem.code == .journalCorrupt)
        #expect(problem.message.contains("kept 9 fixes"))
        #expect(contents.locations == Array(fixes.prefix(9)))
        // Appending after recovery continues a clean file.
        try journal.append(fixes[9])
        journal.close()
        let (_, reread) = try LocationJournal.open(path: path)
        #expect(reread.problem == nil)
        #expect(reread.locations == fixes)
    }

    @Test("a flipped byte mid-file loses that record only: every later good record is kept, the damage saved aside")
    func corruptRecord() throws {
        let directory = TemporaryDirectory()
        let fixes = LocationFixtures.walk(count: 10)
        let path = try directory.journal(holding: fixes)
        var data = try Data(contentsOf: URL(fileURLWithPath: path))
        let recordSize = (data.count - 8) / 10
        data[8 + recordSize * 6 + 20] ^= 0x40
        try data.write(to: URL(fileURLWithPath: path))
        let (journal, contents) = try LocationJournal.open(path: path)
        let message = try #require(contents.problem?.message)
        #expect(message.contains("checksum mismatch at byte \(8 + recordSize * 6)"), "\(message)")
        #expect(message.contains("skipped \(recordSize) damaged bytes in 1 place and kept 9 fixes"), "\(message)")
        #expect(message.hasSuffix("the damaged bytes are saved in \(path).damaged"))
        var expected = fixes
        expected.remove(at: 6)
        #expect(contents.locations == expected)
        let saved = try Data(contentsOf: URL(fileURLWithPath: path + ".damaged"))
        #expect(saved == data[(8 + recordSize * 6)..<(8 + recordSize * 7)])
        // The journal was rewritten clean: appends continue it, and it reads back whole.
        try journal.append(fixes[6])
        journal.close()
        let (_, reread) = try LocationJournal.open(path: path)
        #expect(reread.problem == nil)
        #expect(reread.locations == expected + [fixes[6]])
    }

    @Test("damage in several places, then a cut tail: every whole record between them is kept")
    func severalDamagedPlaces() throws {
        let directory = TemporaryDirectory()
        let fixes = LocationFixtures.walk(count: 20)
        let path = try directory.journal(holding: fixes)
        var data = try Data(contentsOf: URL(fileURLWithPath: path))
        let recordSize = (data.count - 8) / 20
        data[8 + recordSize * 2 + 5] ^= 0x01  // record 2's payload
        data[8 + recordSize * 9] ^= 0xFF  // record 9's length
        data.removeLast(3)  // record 19 cut
        try data.write(to: URL(fileURLWithPath: path))
        let (_, contents) = try LocationJournal.open(path: path)
        #expect(contents.locations == fixes.enumerated().filter { ![2, 9, 19].contains($0.offset) }.map(\.element))
        #expect(contents.problem?.message.contains("in 2 places") == true, "\(String(describing: contents.problem))")
    }

    @Test("a journal has one owner: a second open is refused naming the holder's pid, until the first closes")
    func oneOwner() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("held.journal")
        let fixes = LocationFixtures.walk(count: 3)
        let (first, _) = try LocationJournal.open(path: path)
        try first.append(contentsOf: fixes)
        #expect(throws: LocationError(
            .journalIO,
            "journal \(path) is in use by another process (pid \(getpid())); a journal has one owner: give each daemon its own journal"
        )) { try LocationJournal.open(path: path) }
        first.close()
        let (second, contents) = try LocationJournal.open(path: path)
        #expect(contents.locations == fixes, "the refused open touched nothing")
        second.close()
    }

    @Test("a file that is not a journal is moved aside, never overwritten")
    func notAJournal() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("held.journal")
        try Data("hello, not a journal".utf8).write(to: URL(fileURLWithPath: path))
        let (_, contents) = try LocationJournal.open(path: path)
        #expect(contents.problem?.code == .journalCorrupt)
        #expect(FileManager.default.contents(atPath: path + ".corrupt") == Data("hello, not a journal".utf8))
    }

    @Test("a second file that is not a journal is moved aside beside the first, which is kept")
    func secondNotAJournalKeepsTheFirst() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("held.journal")
        for text in ["first junk", "second junk"] {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            let (journal, contents) = try LocationJournal.open(path: path)
            #expect(contents.problem?.code == .journalCorrupt)
            journal.close()
        }
        #expect(FileManager.default.contents(atPath: path + ".corrupt") == Data("first junk".utf8))
        #expect(FileManager.default.contents(atPath: path + ".corrupt.1") == Data("second junk".utf8))
    }

    @Test("an unwritable location is a journal-io error naming the path")
    func unwritable() {
        #expect {
            _ = try LocationJournal.open(path: "/nonexistent-dir/x.journal")
        } throws: { error in
            (error as? LocationError)?.code == .journalIO
                && (error as? LocationError)?.message.contains("/nonexistent-dir/x.journal") == true
        }
    }
}

@Suite("Journal syncing", .serialized)
struct LocationJournalSyncTests {
    @Test("appended fixes are synced within the sync interval, with no further appends")
    func syncsWithinInterval() async throws {
        let directory = TemporaryDirectory()
        try await serially {
            let clock = TestClock()
            let (journal, _) = try LocationJournal.open(
                path: directory.file("held.journal"), syncInterval: .seconds(1), clock: clock)
            try journal.append(LocationFixtures.walk(0))
            #expect(journal.hasUnsyncedWrites)
            await clock.advance(by: .milliseconds(999))
            #expect(journal.hasUnsyncedWrites)
            await clock.advance(by: .milliseconds(1))
            #expect(!journal.hasUnsyncedWrites)
        }
    }

    @Test("a steady stream of appends is synced at least once per interval")
    func syncsUnderLoad() async throws {
        let directory = TemporaryDirectory()
        try await serially {
            let clock = TestClock()
            let (journal, _) = try LocationJournal.open(
                path: directory.file("held.journal"), syncInterval: .seconds(1), clock: clock)
            for index in 0..<10 {
                try journal.append(LocationFixtures.walk(index))
                await clock.advance(by: .milliseconds(400))
                try journal.append(LocationFixtures.walk(index))
                await clock.advance(by: .milliseconds(600))
                #expect(!journal.hasUnsyncedWrites)
            }
        }
    }
}

/// `location-test-child --append-journal-and-wait`, built beside the test runner: appends locations to a journal
/// and waits; killed with SIGKILL once it says it has appended them all.
enum JournalChild {
    static let executable: String = {
        let runner = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: runner).deletingLastPathComponent().appendingPathComponent("location-test-child").path
    }()

    /// What the child printed, and whether SIGKILL ended it.
    static func appendAndKill(journal: String, locations: String) throws -> (output: String, error: String, killed: Bool) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--append-journal-and-wait", journal, locations]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Its one line comes once every append has returned; it then waits for the signal.
        var output = Data()
        let deadline = Date().addingTimeInterval(60)
        while !output.contains(UInt8(ascii: "\n")), process.isRunning, Date() < deadline {
            output.append(out.fileHandleForReading.availableData)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let error = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let killed = process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL
        return (String(decoding: output, as: UTF8.self), error, killed)
    }
}

@Suite("Journal records and their checksum")
struct JournalRecordTests {
    /// CRC-32 a bit at a time, as the standard defines it: the oracle of the table-driven one.
    static func bitwiseCRC(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
        }
        return ~crc
    }

    @Test("CRC-32 gives the standard's check value and agrees with the bitwise definition at every length and offset")
    func checksum() {
        #expect(Array("123456789".utf8).withUnsafeBufferPointer { CRC32.checksum($0) } == 0xCBF4_3926)
        #expect([UInt8]().withUnsafeBufferPointer { CRC32.checksum($0) } == 0)
        var state: UInt64 = 27
        let bytes = (0..<300).map { _ -> UInt8 in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 56)
        }
        for start in 0..<9 {
            for length in 0...(bytes.count - start) where length < 40 || length % 37 == 0 {
                let slice = Array(bytes[start..<(start + length)])
                #expect(slice.withUnsafeBufferPointer { CRC32.checksum($0) } == Self.bitwiseCRC(slice), "start \(start), length \(length)")
            }
        }
    }

    @Test("a record reads back to its fix, a source name kept to its first 1,024 bytes, and any changed byte is refused")
    func recordsRoundTrip() {
        let long = String(repeating: "é", count: 700)  // 1,400 bytes
        var fixes = LocationFixtures.walk(count: 50)
        fixes[3].source = long
        fixes[4].source = nil
        fixes[5].satellitesVisible = -2
        var bytes: [UInt8] = []
        for fix in fixes { LocationJournal.encodeRecord(fix, into: &bytes) }
        var read: [Location] = []
        var cache = LocationJournal.SourceCache()
        bytes.withUnsafeBufferPointer { buffer in
            var offset = 0
            while offset < buffer.count {
                guard case .success(let (location, next)) = LocationJournal.record(buffer, at: offset, sourceCache: &cache) else {
                    Issue.record("no record at \(offset)")
                    return
                }
                read.append(location)
                offset = next
            }
            // Every byte of the first record matters: its length, payload or checksum.
            var changed = Array(buffer)
            guard case .success(let (_, first)) = LocationJournal.record(buffer, at: 0) else {
                Issue.record("no first record")
                return
            }
            for index in 0..<first {
                changed[index] ^= 0x10
                let result = changed.withUnsafeBufferPointer { LocationJournal.record($0, at: 0) }
                if case .success = result { Issue.record("byte \(index) of the first record changed, and it was still read") }
                changed[index] ^= 0x10
            }
        }
        var expected = fixes
        expected[3].source = String(decoding: Array(long.utf8.prefix(1024)), as: UTF8.self)
        expected[5].satellitesVisible = nil
        #expect(read == expected)
    }
}
