import Foundation
import LocationCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The daemon's lifecycle state, kept in a small file beside the journal so that a daemon restarted after a
/// crash comes back in the state it had, with its held fixes still held for the next foreground.
///
/// The file is `JOURNAL.state`: one JSON object naming the state and the journal it belongs to, by path and
/// by device and inode, so that a record copied from elsewhere, or left beside a journal that was since
/// deleted or replaced (another file renamed over it), is recognised as stale and ignored. (A journal deleted
/// and created again may get its inode back; the record then still applies, which only means the daemon
/// resumes its last state holding whatever the new journal has.) Each save writes a temporary file, syncs it, renames it over the
/// record and syncs the directory: a reader sees the old record or the new one, never a torn one, whether the
/// process is killed or the power fails.
///
/// ```swift
/// let file = LifecycleStateFile(journalPath: "/var/lib/locationd/held.journal")
/// if case .restored(let state) = file.load() { try application.transition(to: state) }
/// file.record(application)       // saves every later transition
/// ```
package final class LifecycleStateFile: Sendable {
    /// The journal the record belongs to.
    package let journalPath: String
    /// The record's own path: the journal's path with `.state` appended.
    package let path: String

    /// What the file holds.
    package struct Record: Codable, Sendable, Hashable {
        /// The format version; 1.
        package var version: Int
        /// The last lifecycle state the daemon reached.
        package var state: ApplicationState
        /// The journal's absolute path when the record was written.
        package var journal: String
        /// The journal file's device number.
        package var journalDevice: UInt64
        /// The journal file's inode number.
        package var journalInode: UInt64
        /// The inode of a rewritten journal about to be renamed over it (same device), which the record
        /// accepts too: a crash between that rename and the record's rewrite leaves a record that still applies.
        package var nextJournalInode: UInt64?

        /// Creates a record.
        package init(state: ApplicationState, journal: String, journalDevice: UInt64, journalInode: UInt64) {
            self.version = 1
            self.state = state
            self.journal = journal
            self.journalDevice = journalDevice
            self.journalInode = journalInode
        }
    }

    /// The outcome of reading the record at start.
    package enum Loaded: Sendable, Hashable {
        /// There is no record: the daemon has not run with this journal before.
        case absent
        /// The record is valid and belongs to the journal as it is now.
        case restored(ApplicationState)
        /// The record is unusable: unreadable, of another version, or left by a different journal.
        /// The reason is one line for the log; the record is replaced at the next save.
        case ignored(reason: String)
    }

    /// What the saves share: the last state saved, and the identity of a journal staged to replace the current one.
    private struct Saved {
        var state: ApplicationState?
        var staged: (device: UInt64, inode: UInt64)?
    }

    private let lock = Locked(Saved())

    /// A record for the journal at `journalPath` (made absolute against the current directory).
    package init(journalPath: String) {
        let absolute =
            journalPath.hasPrefix("/")
            ? journalPath : FileManager.default.currentDirectoryPath + "/" + journalPath
        self.journalPath = URL(fileURLWithPath: absolute).standardizedFileURL.path
        self.path = self.journalPath + ".state"
    }

    /// Reads the record and checks it against the journal file as it is now.
    ///
    /// Call before the journal is opened: opening may replace a journal that is not one.
    package func load() -> Loaded {
        let data: Data
        switch Self.readSmallFile(path) {
        case .success(let bytes): data = Data(bytes)
        case .failure(let error):
            return error.errno == ENOENT ? .absent : .ignored(reason: "state record \(path) cannot be read: \(error.reason)")
        }
        let record: Record
        do {
            record = try JSONDecoder().decode(Record.self, from: data)
        } catch {
            return .ignored(reason: "state record \(path) is corrupt (\(data.count) bytes, not a state record)")
        }
        guard record.version == 1 else {
            return .ignored(reason: "state record \(path) has unknown version \(record.version)")
        }
        guard record.state != .notRunning else {
            return .ignored(reason: "state record \(path) holds notRunning, which is not a state to resume")
        }
        guard record.journal == journalPath else {
            return .ignored(reason: "state record \(path) belongs to journal \(record.journal), not \(journalPath)")
        }
        guard let identity = Self.identity(of: journalPath) else {
            return .ignored(reason: "state record \(path) belongs to journal \(journalPath), which no longer exists")
        }
        let accepted = identity == (record.journalDevice, record.journalInode)
            || (identity.device == record.journalDevice && identity.inode == record.nextJournalInode)
        guard accepted else {
            return .ignored(
                reason: "state record \(path) belongs to an earlier file at \(journalPath) (inode \(record.journalInode), "
                    + "now \(identity.inode)): the journal was replaced")
        }
        return .restored(record.state)
    }

    /// The first 64 KiB of a regular file (a record is about 200 bytes; more is not a record), read with
    /// plain system calls, never through a link; the errno when it cannot be read.
    private static func readSmallFile(_ path: String) -> Result<[UInt8], SystemIO.Failure> {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW)
        guard fd >= 0 else { return .failure(SystemIO.Failure(errno)) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return .failure(SystemIO.Failure(errno)) }
        guard info.st_mode & S_IFMT == S_IFREG else { return .failure(SystemIO.Failure(EINVAL)) }
        var bytes = [UInt8](repeating: 0, count: 65_536)
        return SystemIO.read(fd, into: &bytes, upTo: bytes.count).map { Array(bytes[0..<$0]) }
    }

    /// Writes `state` atomically, tied to the journal file as it is now.
    ///
    /// - Throws: ``LocationError/Code/journalIO`` naming the file and the reason when the journal is missing
    ///   or the record cannot be written.
    package func save(_ state: ApplicationState) throws(LocationError) {
        try lock.withLock { saved in record(state, &saved) }.get()
    }

    /// The journal is about to be replaced by the file at `staged` (written and synced, not yet renamed): the
    /// record is written again, with the last state saved, accepting that file as well as the current one,
    /// until ``journalReplaced(_:failed:)``.
    package func journalWillBeReplaced(by staged: String, failed: (LocationError) -> Void) {
        guard let identity = Self.identity(of: staged) else { return }
        let result = lock.withLock { saved -> Result<Void, LocationError> in
            saved.staged = identity
            guard let state = saved.state else { return .success(()) }
            return record(state, &saved)
        }
        if case .failure(let error) = result { failed(error) }
    }

    /// The journal was replaced: the record is written again with `state`, naming the new file alone once
    /// it is in place.
    package func journalReplaced(_ state: ApplicationState, failed: (LocationError) -> Void) {
        guard state != .notRunning else { return }
        let result = lock.withLock { saved -> Result<Void, LocationError> in
            // A later rewrite may be staged already: it stays accepted until its own rename is done.
            if let staged = saved.staged, let current = Self.identity(of: journalPath), current == staged {
                saved.staged = nil
            }
            return record(state, &saved)
        }
        if case .failure(let error) = result { failed(error) }
    }

    /// Writes the record for `state` and the journal as it is now (with the lock held).
    private func record(_ state: ApplicationState, _ saved: inout Saved) -> Result<Void, LocationError> {
        saved.state = state
        return {
            guard let identity = Self.identity(of: journalPath) else {
                return .failure(
                    LocationError(.journalIO, "cannot save lifecycle state: journal \(journalPath) does not exist"))
            }
            var record = Record(
                state: state, journal: journalPath, journalDevice: identity.device, journalInode: identity.inode)
            if let staged = saved.staged, staged.device == identity.device, staged.inode != identity.inode {
                record.nextJournalInode = staged.inode
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            guard let body = try? encoder.encode(record) else {
                return .failure(LocationError(.journalIO, "cannot encode lifecycle state for \(path)"))
            }
            return Result { () throws(LocationError) in try Self.writeAtomically(Array(body) + [0x0A], to: path) }
        }()
    }

    /// Saves a state the app has reached, as its session reports it; termination is not saved (a daemon
    /// that stops keeps the state its clients left it in). A failed save is passed to `failed`: the
    /// daemon runs on.
    package func note(_ state: ApplicationState, failed: (LocationError) -> Void) {
        guard state != .notRunning else { return }
        do throws(LocationError) { try save(state) } catch { failed(error) }
    }

    /// The device and inode of the file at `path`, if it exists.
    static func identity(of path: String) -> (device: UInt64, inode: UInt64)? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return (UInt64(info.st_dev), UInt64(info.st_ino))
    }

    /// Temporary file, `write`, `fsync`, `rename` over `path`, `fsync` of the directory.
    private static func writeAtomically(_ bytes: [UInt8], to path: String) throws(LocationError) {
        func failure(_ step: String, _ number: Int32) -> LocationError {
            LocationError(.journalIO, "cannot \(step) state record \(path): \(String(cString: strerror(number)))")
        }
        let temporary = path + ".tmp"
        // Never through a link planted at the temporary's name (another user's, in a directory others may
        // write): the name is removed, then created afresh, refusing to follow or reuse anything there.
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw failure("create", errno) }
        if case .failure(let problem) = SystemIO.writeAll(fd, bytes) {
            close(fd)
            unlink(temporary)
            throw failure("write", problem.errno)
        }
        guard fsync(fd) == 0 else {
            let number = errno
            close(fd)
            unlink(temporary)
            throw failure("sync", number)
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let number = errno
            unlink(temporary)
            throw failure("replace", number)
        }
        // The rename itself survives a power cut only once the directory is synced.
        FilePathText.syncDirectory(containing: path)
    }
}
