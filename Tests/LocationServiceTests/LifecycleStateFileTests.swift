import Foundation
import LocationCore
import LocationService
import Testing

@Suite("The lifecycle state record beside the journal")
struct LifecycleStateFileTests {
    /// A directory with an (empty) journal file in it.
    static func journal() throws -> (TemporaryDirectory, String) {
        let directory = TemporaryDirectory()
        let path = directory.file("held.journal")
        #expect(FileManager.default.createFile(atPath: path, contents: Data("LOCJRNL1".utf8)))
        return (directory, path)
    }

    @Test("no record, then what was saved, written atomically with no temporary file left")
    func saveAndLoad() throws {
        let (directory, journal) = try Self.journal()
        let file = LifecycleStateFile(journalPath: journal)
        #expect(file.path == journal + ".state")
        #expect(file.load() == .absent)
        try file.save(.suspended)
        #expect(file.load() == .restored(.suspended))
        try file.save(.background)
        #expect(file.load() == .restored(.background))
        #expect(!FileManager.default.fileExists(atPath: file.path + ".tmp"))
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        _ = directory
    }

    @Test("a journal rewritten and renamed over the old one leaves a record that applies at every step, and a later rewrite staged before the first's rewrite of the record stays accepted")
    func aRewrittenJournalKeepsTheRecordValidAcrossTheRename() throws {
        let (directory, journal) = try Self.journal()
        let file = LifecycleStateFile(journalPath: journal)
        try file.save(.suspended)
        var failures: [LocationError] = []
        func rewrite() throws {
            let staged = journal + ".tmp"
            #expect(FileManager.default.createFile(atPath: staged, contents: Data("LOCJRNL1".utf8)))
            file.journalWillBeReplaced(by: staged) { failures.append($0) }
            #expect(file.load() == .restored(.suspended), "before the rename")
            #expect(rename(staged, journal) == 0)
            #expect(file.load() == .restored(.suspended), "after the rename, before the record is written again")
        }
        try rewrite()
        file.journalReplaced(.suspended) { failures.append($0) }
        #expect(file.load() == .restored(.suspended))
        #expect(try !String(contentsOfFile: file.path, encoding: .utf8).contains("nextJournalInode"), "the new file alone")

        // A second rewrite staged and renamed before the first's record rewrite runs (it runs later, on the
        // manager's delivery queue): that rewrite must not drop the second file.
        try rewrite()
        let second = try String(contentsOfFile: file.path, encoding: .utf8)
        #expect(second.contains("nextJournalInode"))
        file.journalReplaced(.suspended) { failures.append($0) }
        #expect(file.load() == .restored(.suspended))

        // Any other file put there is still a replaced journal.
        let other = directory.file("other")
        #expect(FileManager.default.createFile(atPath: other, contents: Data("LOCJRNL1".utf8)))
        #expect(rename(other, journal) == 0)
        if case .ignored(let reason) = file.load() {
            #expect(reason.contains("the journal was replaced"))
        } else {
            Issue.record("a journal nobody staged was accepted")
        }
        #expect(failures.isEmpty, "\(failures)")
    }

    @Test("a link planted at the record's temporary name is removed, not followed: the file it points to is untouched")
    func aLinkAtTheTemporaryNameIsNotFollowed() throws {
        let (directory, journal) = try Self.journal()
        let file = LifecycleStateFile(journalPath: journal)
        let victim = directory.file("victim")
        try "precious\n".write(toFile: victim, atomically: true, encoding: .utf8)
        #expect(symlink(victim, file.path + ".tmp") == 0)
        try file.save(.suspended)
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious\n")
        #expect(file.load() == .restored(.suspended))
        var info = stat()
        #expect(lstat(file.path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG, "the record is a file of its own")
    }

    @Test("a relative journal path names the same record as the absolute one")
    func relativePath() throws {
        let (directory, journal) = try Self.journal()
        try LifecycleStateFile(journalPath: journal).save(.suspended)
        let previous = FileManager.default.currentDirectoryPath
        #expect(FileManager.default.changeCurrentDirectoryPath(directory.path))
        defer { _ = FileManager.default.changeCurrentDirectoryPath(previous) }
        #expect(LifecycleStateFile(journalPath: "./held.journal").load() == .restored(.suspended))
    }

    @Test("a corrupt, foreign or stale record is ignored with a reason")
    func unusableRecords() throws {
        let (directory, journal) = try Self.journal()
        let file = LifecycleStateFile(journalPath: journal)
        func reason() -> String {
            if case .ignored(let reason) = file.load() { return reason }
            return "not ignored"
        }

        try Data("{\"state\":\"sus".utf8).write(to: URL(fileURLWithPath: file.path))
        #expect(reason().contains("is corrupt"))

        try file.save(.suspended)
        var text = try String(contentsOfFile: file.path, encoding: .utf8)
        try text.replacingOccurrences(of: "\"version\":1", with: "\"version\":7").write(
            toFile: file.path, atomically: true, encoding: .utf8)
        #expect(reason().contains("unknown version 7"))

        // The record of another journal copied next to this one.
        let other = directory.file("other.journal")
        #expect(FileManager.default.createFile(atPath: other, contents: Data("LOCJRNL1".utf8)))
        try LifecycleStateFile(journalPath: other).save(.suspended)
        try? FileManager.default.removeItem(atPath: file.path)
        try FileManager.default.copyItem(atPath: other + ".state", toPath: file.path)
        #expect(reason().contains("belongs to journal \(other)"))

        // Another file renamed over the journal: same path, another file.
        try file.save(.suspended)
        let replacement = directory.file("replacement")
        #expect(FileManager.default.createFile(atPath: replacement, contents: Data("LOCJRNL1".utf8)))
        #expect(rename(replacement, journal) == 0)
        #expect(reason().contains("the journal was replaced"))
        try FileManager.default.removeItem(atPath: journal)
        #expect(reason().contains("no longer exists"))
        #expect(FileManager.default.createFile(atPath: journal, contents: Data("LOCJRNL1".utf8)))

        text = "{\"journal\":\"\(journal)\",\"journalDevice\":0,\"journalInode\":0,\"state\":\"notRunning\",\"version\":1}"
        try text.write(toFile: file.path, atomically: true, encoding: .utf8)
        #expect(reason().contains("notRunning"))

        let unsaved = #expect(throws: LocationError.self) { try LifecycleStateFile(journalPath: directory.file("none")).save(.active) }
        #expect(unsaved?.code == .journalIO, "\(String(describing: unsaved))")
        #expect(unsaved?.message == "cannot save lifecycle state: journal \(directory.file("none")) does not exist")
    }

    @Test("noting states saves each one, keeps the last running state on termination, and reports a failed save")
    func notesStates() async throws {
        let (directory, journal) = try Self.journal()
        let file = LifecycleStateFile(journalPath: journal)
        var failures: [LocationError] = []
        for state in [ApplicationState.active, .background, .suspended] {
            file.note(state) { failures.append($0) }
            #expect(file.load() == .restored(state))
        }
        file.note(.notRunning) { failures.append($0) }
        #expect(file.load() == .restored(.suspended))
        #expect(failures.isEmpty)
        try FileManager.default.removeItem(atPath: journal)
        file.note(.active) { failures.append($0) }
        #expect(failures.map(\.code) == [.journalIO])
        _ = directory
    }
}
