import Foundation
import LocationControl
import LocationCore
import LocationService

#if canImport(Glibc)
import Glibc
#endif

/// The files of one app's session, all beside its journal: the one place their names are made.
struct AppFiles: Sendable, Hashable {
    /// The app's journal of held fixes, `apps/UID/APP.journal`.
    let journal: String

    /// The lifecycle state record (``LifecycleStateFile``).
    var state: String { LifecycleStateFile(journalPath: journal).path }
    /// The journal's lock, held while a daemon has it open.
    var journalLock: String { journal + ".lock" }
    /// The flushed batch no consumer has acknowledged (``HeldOutbox``), and its lock.
    var outbox: String { journal + ".outbox" }
    var outboxLock: String { outbox + ".lock" }
    /// The app's own policy as its opens set it, as an `open` request line.
    var policy: String { journal + ".policy" }
    /// There while the app itself is connected: a restart after a crash knows it was.
    var attached: String { journal + ".attached" }
    /// Since when the app has been gone, while its session holds for it.
    var gone: String { journal + ".gone" }
    /// The app's monitored regions and their states (a `RegionMonitor.Snapshot` as JSON).
    var regions: String { journal + ".regions" }

    /// Every file, the journal first.
    var all: [String] { [journal, state, journalLock, outbox, outboxLock, policy, attached, gone, regions] }

    /// Removes every file of the app (an app dropped after `apps.keepAbandoned`).
    func removeAll() {
        for path in all { unlink(path) }
    }
}

/// Where locationd keeps its apps: `apps/UID/APP.*` beside the daemon's own journal, owner-only. It makes
/// each app's file names, creates the directories, and lists the apps a restart brings back.
struct AppDirectory: Sendable {
    /// `apps`, beside the daemon's journal.
    let path: String

    /// The directory for apps beside `daemonJournal`.
    init(daemonJournal: String) {
        path = FilePathText.parent(of: daemonJournal) + "/apps"
    }

    /// The files of `app` of the user `owner`.
    func files(app: String, owner: UInt32) -> AppFiles {
        AppFiles(journal: "\(path)/\(owner)/\(app).journal")
    }

    /// Creates `apps` and `apps/UID` (mode 0700: one user's fixes are nobody else's business) when missing,
    /// and refuses either when it is not a private directory of the daemon's (``checkPrivate(_:)``).
    func createDirectories(for owner: UInt32, app: String) throws(LocationError) {
        for directory in [path, "\(path)/\(owner)"] {
            if mkdir(directory, 0o700) != 0, errno != EEXIST {
                throw LocationError(.journalIO, "cannot create \(directory) for the app \(app)'s journal: \(String(cString: strerror(errno)))")
            }
            try Self.checkPrivate(directory)
        }
    }

    /// Refuses `directory` unless it is a directory (not a link to one) of the daemon's own user that no
    /// other user may enter: anyone else who could write there could plant links the daemon would write through.
    static func checkPrivate(_ directory: String) throws(LocationError) {
        var info = stat()
        guard lstat(directory, &info) == 0 else {
            throw LocationError(.journalIO, "cannot inspect \(directory): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw LocationError(.journalIO, "\(directory) is not a directory (a link?); locationd keeps its apps' journals only in a directory of its own")
        }
        guard info.st_uid == geteuid() else {
            throw LocationError(.journalIO, "\(directory) belongs to uid \(info.st_uid), not to locationd's user (uid \(geteuid())); remove it, and locationd creates its own")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw LocationError(.journalIO, "\(directory) may be used by other users (mode \(String(info.st_mode & 0o7777, radix: 8))); chmod 700 \(directory)")
        }
    }

    /// Refuses a journal directory (the one holding the daemon's journal, and `apps`) that users other than
    /// its owner may write, sticky (as /tmp) or not: they could plant names (`apps`, a lock, a link) first.
    static func checkJournalDirectory(of journal: String) throws(LocationError) {
        let directory = FilePathText.parent(of: journal)
        var info = stat()
        guard stat(directory, &info) == 0 else {
            // Named as the user gave it, not by the first of the files beside the journal that fails to open.
            let reason = String(cString: strerror(errno))
            throw LocationError(.journalIO, "cannot use the journal directory \(directory): \(reason); create it (mode 700) or choose another --journal")
        }
        guard info.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
            throw LocationError(.journalIO, "the journal directory \(directory) may be written by other users (mode \(String(info.st_mode & 0o7777, radix: 8))), who could plant files locationd would write through; use a directory only its owner can write (chmod 700), such as /var/lib/locationd")
        }
        guard info.st_uid == geteuid() else {
            throw LocationError(.journalIO, "the journal directory \(directory) belongs to uid \(info.st_uid), not to locationd's user (uid \(geteuid())); use a directory of its own, such as /var/lib/locationd")
        }
        // A journal that is there already must be the daemon's own (another user's file could be read by them).
        var file = stat()
        if lstat(journal, &file) == 0, file.st_mode & S_IFMT == S_IFREG, file.st_uid != geteuid() {
            throw LocationError(.journalIO, "the journal \(journal) belongs to uid \(file.st_uid), not to locationd's user (uid \(geteuid())); move it away, and locationd starts a new one")
        }
    }

    /// The apps with a journal here, by owner then id, as a restart finds them; names that are not a
    /// user id or not a valid app id (the shared app `default` included) are skipped.
    func journaledApps() -> [(owner: UInt32, app: String)] {
        let owners = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        var found: [(owner: UInt32, app: String)] = []
        for ownerName in owners.sorted() {
            // Only a plain uid (no sign, no leading zero), as the daemon itself names them.
            guard let owner = UInt32(ownerName), owner != UInt32.max, String(owner) == ownerName else { continue }
            let names = (try? FileManager.default.contentsOfDirectory(atPath: "\(path)/\(ownerName)")) ?? []
            for name in names.sorted() where name.hasSuffix(".journal") {
                let app = String(name.dropLast(".journal".count))
                guard (try? ControlRequest.checkApp(app)) != nil, app != ControlRequest.defaultApp else { continue }
                found.append((owner, app))
            }
        }
        return found
    }
}
