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
