import Foundation
import LocationControl
import LocationCore
import LocationService
import Logging

/// One app that locationd serves: its own lifecycle and manager (on a tap of the shared receiver), its
/// journal and state file, the connections watching it, and whether the app itself is connected.
final class AppSession: Sendable {
    /// The app's id, as clients name it.
    let id: String
    /// The user the session belongs to; `nil` for `default`, which every client may use.
    let owner: UInt32?
    /// The owner and id together: what names the session in the daemon.
    var key: AppKey { AppKey(owner: owner, id: id) }
    /// The app's lifecycle and manager, and the lines they make.
    let session: LocationSession
    /// Where the state is saved on every change, when the session journals.
    let stateFile: LifecycleStateFile?
    /// The flushed batch no consumer has acknowledged yet.
    let outbox: HeldOutbox

    private struct Links {
        var watchers: Set<ControlConnection> = []
        /// The watchers that take held batches as journal records (``HeldBatchEncoding/records``).
        var recordWatchers: Set<ControlConnection> = []
        /// The connections that are the app itself (opened with `attach`); the app is gone once the last closes.
        var attached: Set<ControlConnection> = []
        /// Since when the app has been gone while its session holds its fixes.
        var abandonedSince: Date?
        /// When it went, on the monotonic clock, and how long it had been gone by then (a session restored at
        /// start): expiry counts on this clock, so a step of the wall clock (NTP on a Pi without an RTC)
        /// neither drops an app early nor keeps it for ever.
        var abandonedAt: ContinuousClock.Instant?
        var goneBefore: Double = 0
        /// The background location mode the app had when it went; it is off while the app is gone, so that
        /// its fixes are held rather than delivered live to nobody.
        var modeBeforeGone: Bool?
        /// When a client last opened the app or asked something of it (monotonic): an app nobody uses expires.
        var lastUsed = ContinuousClock.now
    }

    private let links = Locked(Links())
    /// Called at every region event, to save the regions' states (set once the session exists).
    private let regionEventHook = Locked<(@Sendable () -> Void)?>(nil)
    /// The application whose state changes are saved; `nil` before the launch is done and once the daemon stops.
    private let savingState: Locked<Application?>

    var application: Application { session.application }
    var manager: LocationManager { session.manager }

    /// Creates the session and launches its app into `startState`; `send` receives each of its lines with
    /// the connections watching it then.
    init(
        id: String, owner: UInt32?, source: any LocationSource, settings: ServiceConfiguration,
        startState: ApplicationState, stateFile: LifecycleStateFile?, logger: Logger,
        now: @escaping @Sendable () -> Date,
        send: @escaping @Sendable (Outgoing, Set<ControlConnection>) -> Void
    ) throws(LocationError) {
        self.id = id
        self.owner = owner
        self.stateFile = stateFile
        let outbox = try HeldOutbox(files: settings.journalPath.map(AppFiles.init(journal:)), capacity: settings.batchCapacity)
        self.outbox = outbox
        if let problem = outbox.problem { logger.warning("\(problem.message)") }
        if outbox.count > 0 {
            logger.info("the app \(id) has \(outbox.count) flushed fixes no consumer acknowledged; they are sent to its next watcher")
        }
        let links = self.links
        let regionEventHook = self.regionEventHook
        // Set once the launch is done; until then the launch's own states are not saved (the init saves
        // where it ended). Cleared when the daemon stops, whose own changes are not the app's.
        let launched = Locked<Application?>(nil)
        savingState = launched
        session = try LocationSession(
            source: source, settings: settings, startState: startState, logger: logger, now: now
        ) { event in
            // The source's problems go to the log once, from the default app's session; the journal's
            // problems the manager logs itself.
            if id == ControlRequest.defaultApp, case .error(let error) = event, error.code != .journalIO,
                error.code != .journalCorrupt
            {
                logger.warning("\(error.description)")
            }
            // On every change the app's state as it is now is saved, so that a restart resumes it. Not the
            // state the line reports: lines arrive after the fact, and saving one a later change has already
            // left (a launch walks through active into suspended) would make a kill resume the wrong state.
            if case .lifecycle = event, let application = launched.withLock({ $0 }) {
                stateFile?.note(application.applicationState) { error in logger.error("\(error.message)") }
            }
            // A region's new state is saved as it changes, so that a restart neither repeats nor loses it.
            if case .region = event { regionEventHook.withLock { $0 }?() }
            let (watchers, recordWatchers) = links.withLock { ($0.watchers, $0.recordWatchers) }
            guard case .locations(let locations, .held(let reason)) = event else {
                send(.event(event), watchers)
                return
            }
            // A flushed batch joins what no consumer has acknowledged yet, before the manager clears its
            // journal (it does so once this returns), and everything waiting goes out as one batch with its id.
            let count: Int, batchID: String?
            do throws(LocationError) {
                let (pending, id, dropped) = try outbox.add(locations, reason: reason)
                if dropped > 0 {
                    logger.warning("the app \(id)'s outbox dropped its \(dropped) oldest unacknowledged fixes: it holds at most \(outbox.capacity)")
                }
                (count, batchID) = (pending, id)
            } catch {
                // The batch is kept in memory and sent, and the file is rewritten whole once writing works
                // again; only a crash before then, or before an ack, would lose it.
                logger.error("\(error.message); the app \(id)'s unacknowledged fixes are kept in memory until the outbox can be written")
                guard let (pending, id) = outbox.pending() else { return }
                (count, batchID) = (pending.count, id)
            }
            // Encoded once in each encoding some watcher takes, and not at all without one (a later watcher
            // gets it from the outbox).
            guard !watchers.isEmpty, let batchID else { return }
            let groups: [(HeldBatchEncoding, Set<ControlConnection>)] = [
                (.locations, watchers.subtracting(recordWatchers)), (.records, watchers.intersection(recordWatchers)),
            ]
            for (encoding, group) in groups where !group.isEmpty {
                guard let line = outbox.batchLine(id: batchID, count: count, reason: reason, encoding: encoding) else { return }
                send(.batch(line: line, count: count), group)
            }
            outbox.markSent()
        }
        launched.withLock { $0 = session.application }
        regionEventHook.withLock { $0 = { [weak self] in self?.scheduleRegionSave() } }
        // The state record names the journal by its inode; a journal rewritten (compacted, cleared) is a new file.
        let application = session.application
        // Before the rename the record accepts the new file too, so that no crash between the two leaves it
        // naming a file that is gone (the restart would ignore it and resume active).
        session.manager.onJournalWillBeReplaced { [stateFile] staged in
            stateFile?.journalWillBeReplaced(by: staged) { error in logger.error("\(error.message)") }
        }
        session.manager.onJournalReplaced { [stateFile] in
            stateFile?.journalReplaced(application.applicationState) { error in logger.error("\(error.message)") }
        }
        // The first record must be written, or the session is not created.
        try stateFile?.save(session.application.applicationState)
    }

    /// Saves no more state changes: the daemon is stopping (or ending the session), and what stopping does to
    /// the app (its updates stopped, so a background app is suspended) is not where it was.
    func stopSavingState() {
        savingState.withLock { $0 = nil }
        // The regions as they are now, not half a second ago; then no more.
        saveRegions()
        regionSaving.withLock { $0 = true }
    }

    /// Saves the regions soon (within half a second), once for however many changes and events come
    /// meanwhile: a burst of transitions at one fix, or thousands of adds, cost one write each, not one a
    /// change, and never delay the fix. A kill -9 within that half second forgets those changes (a restart
    /// may then say an enter again).
    func scheduleRegionSave() {
        let first = regionSavePending.withLock { pending -> Bool in
            defer { pending = true }
            return !pending
        }
        guard first else { return }
        Task.detached { [weak self] in
            try? await Task.sleep(for: .milliseconds(500))
            self?.regionSavePending.withLock { $0 = false }
            self?.saveRegions()
        }
    }

    /// Whether `uid` may use this session: its owner, root, or anyone for `default`.
    func admits(_ uid: UInt32?) -> Bool {
        guard let owner else { return true }
        return uid == owner || uid == 0
    }

    /// The batch no consumer has acknowledged, as the line a new watcher gets first, with how many fixes it
    /// has; `nil` when nothing waits.
    func pendingBatch(_ encoding: HeldBatchEncoding) -> (line: [UInt8], count: Int)? {
        guard let (locations, id) = outbox.pending(),
            let line = outbox.batchLine(id: id, count: locations.count, reason: outbox.reasonForNewWatcher(), encoding: encoding)
        else { return nil }
        return (line, locations.count)
    }

    /// Adds a watcher, which takes held batches in `encoding`.
    func watch(from connection: ControlConnection, batches encoding: HeldBatchEncoding) {
        links.withLock { links in
            links.watchers.insert(connection)
            if encoding == .records { links.recordWatchers.insert(connection) } else { links.recordWatchers.remove(connection) }
        }
    }

    /// Makes `connection` the app itself: the app is back.
    func attach(_ connection: ControlConnection) {
        let mode = links.withLock { links -> Bool? in
            links.attached.insert(connection)
            links.abandonedSince = nil
            links.abandonedAt = nil
            defer { links.modeBeforeGone = nil }
            return links.modeBeforeGone
        }
        if let mode { manager.allowsBackgroundLocationUpdates = mode }
        if let goneMarker { unlink(goneMarker) }
        // Should the daemon die while the app is here, a restart must know the app was attached (and is gone
        // until it opens its session again), not resume it in the foreground with nobody there.
        if let attachedMarker { Self.writeSmallFile(attachedMarker, "attached\n") }
    }

    /// Beside the journal while the app itself is connected.
    var attachedMarker: String? { files?.attached }

    /// Saves one at a time, each from the snapshot taken under it: the last save is of the newest state;
    /// true once the session has stopped saving (a save scheduled before then does nothing: the app's files
    /// may be gone).
    private let regionSaving = Locked(false)
    /// Whether a save is scheduled (``scheduleRegionSave()``).
    private let regionSavePending = Locked(false)

    /// Writes the app's regions and their states beside its journal (atomically), so that a restart
    /// resumes them: after every change and every region event. Nothing without a journal.
    func saveRegions() {
        guard let path = files?.regions else { return }
        regionSaving.withLock { stopped in
            guard !stopped else { return }
            RegionStateFile.save(manager.regionSnapshot, to: path)
        }
    }

    /// Restores the regions a previous run saved; a file that cannot be read is logged and left for a
    /// person to look at (renamed `.damaged`), and the app starts with none.
    func restoreRegions(logger: Logger) {
        guard let path = files?.regions else { return }
        switch RegionStateFile.load(path) {
        case .absent: break
        case .snapshot(let snapshot): manager.restoreRegions(snapshot)
        case .denied(let reason):
            // Kept aside rather than in the way: the app's next save would replace it.
            rename(path, path + ".damaged")
            logger.error("the app \(id)'s regions file \(path) cannot be opened (\(reason)); it is kept as \(path).damaged and the app starts with no regions")
        case .setAside(let reason):
            logger.error("the app \(id)'s regions file \(path) \(reason); it is kept as \(path).damaged and the app starts with no regions")
        }
    }

    /// The session's files beside its journal, when it journals.
    var files: AppFiles? { manager.journalPath.map(AppFiles.init(journal:)) }

    /// Beside the journal: the app's own policy as its opens set it, as an `open` request line, so that a
    /// restart restores it.
    var policyFile: String? { files?.policy }

    /// Whether the app was attached when the daemon last stopped (it died without seeing the app go).
    func wasAttached() -> Bool {
        guard let attachedMarker else { return false }
        var info = stat()
        return lstat(attachedMarker, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
    }

    /// Forgets that the app was attached (it went, or stopped).
    func clearAttachedMarker() {
        if let attachedMarker { unlink(attachedMarker) }
    }

    /// The policy saved by earlier opens, if the file holds a valid one.
    func savedPolicy() -> AppPolicy? {
        policyFile.flatMap(Self.savedPolicy(in:))
    }

    /// The policy saved in `path` (an `open` request line), if it holds a valid one.
    static func savedPolicy(in path: String) -> AppPolicy? {
        guard let bytes = readSmallFile(path), case .open(_, _, _, let policy, _)? = try? ControlRequest(line: bytes)
        else { return nil }
        return policy
    }

    /// Writes `text` to `path` through a new temporary file, synced and renamed over it (no link followed).
    static func writeSmallFile(_ path: String, _ text: String) {
        let temporary = path + ".tmp"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        if written == bytes.count, synced { rename(temporary, path) } else { unlink(temporary) }
    }

    /// The bytes of a small regular file (under 4 KiB), not through a link.
    static func readSmallFile(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size < 4096 else { return nil }
        var buffer = [UInt8](repeating: 0, count: Int(info.st_size))
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        return count == buffer.count ? buffer : nil
    }

    /// Beside the journal, the time the app went away, so that a restarted daemon knows it is still gone
    /// (and since when); absent while the app is there, and without a journal.
    var goneMarker: String? { files?.gone }

    /// Notes that the app went away at `date` (in the marker), for a restart to find.
    func saveGone(at date: Date) {
        guard let goneMarker else { return }
        let text = RFC3339.string(from: Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))) + "\n"
        let fd = open(goneMarker, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return }
        _ = text.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
        close(fd)
    }

    /// The time the marker says the app went away, if there is a marker (a regular file of one date).
    func savedGone() -> Date? {
        guard let goneMarker else { return nil }
        var info = stat()
        guard lstat(goneMarker, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size < 64,
            let text = try? String(contentsOfFile: goneMarker, encoding: .utf8)
        else { return nil }
        return RFC3339.parse(text.trimmingCharacters(in: .whitespacesAndNewlines))?.date
    }

    /// The app stopped being this connection (it stopped its updates, or is quitting): nothing is held for
    /// it when the connection closes.
    func detach(_ connection: ControlConnection) {
        let none = links.withLock { links -> Bool in
            guard links.attached.remove(connection) != nil else { return false }
            return links.attached.isEmpty
        }
        if none { clearAttachedMarker() }
    }

    /// Forgets a closed connection. Returns `true` when it was the app itself and no other connection of the
    /// app remains: the app is now gone.
    func connectionClosed(_ connection: ControlConnection, at date: Date) -> Bool {
        links.withLock { links in
            links.watchers.remove(connection)
            links.recordWatchers.remove(connection)
            guard links.attached.remove(connection) != nil, links.attached.isEmpty else { return false }
            links.abandonedSince = date
            links.abandonedAt = .now
            links.goneBefore = 0
            return true
        }
    }

    /// Marks the app gone since `date` (a session restored at start, whose app has not come back yet).
    ///
    /// `now` is the wall-clock time of the restore: the app counts as gone for `now - date` already (none if
    /// the clock is behind the marker, as on a machine that has not set its clock yet), then on the
    /// monotonic clock.
    func markAbandoned(since date: Date, now: Date) {
        links.withLock { links in
            guard links.attached.isEmpty else { return }
            links.abandonedSince = date
            links.abandonedAt = .now
            links.goneBefore = max(0, now.timeIntervalSince(date))
        }
    }

    /// How long the app has been gone, counted on the monotonic clock; `nil` while it is not gone.
    var goneFor: Double? {
        links.withLock { links in
            links.abandonedAt.map { links.goneBefore + (ContinuousClock.now - $0).seconds }
        }
    }

    /// Whether a gone marker is there (even one that cannot be read).
    func hasGoneMarker() -> Bool {
        guard let goneMarker else { return false }
        var info = stat()
        return lstat(goneMarker, &info) == 0
    }

    /// Since when the app has been gone, if it is.
    var abandonedSince: Date? { links.withLock { $0.abandonedSince } }

    /// Whether the app itself is connected.
    var isAttached: Bool { links.withLock { !$0.attached.isEmpty } }

    /// Whether `connection` is the app itself.
    func isAttached(by connection: ControlConnection) -> Bool { links.withLock { $0.attached.contains(connection) } }

    /// The app is back and watching: what its session held for it goes to the outbox now, and the session,
    /// suspended while the app was gone, is inactive, as a relaunched app is, until the app's own state request.
    func takeBackHeld() async {
        manager.deliverHeldNow()
        if application.applicationState == .suspended { try? application.transition(to: .inactive) }
        await application.waitForPendingEvents()
        await manager.waitForPendingDeliveries()
    }

    /// A client opened the app or asked something of it.
    func noteUse() {
        links.withLock { $0.lastUsed = .now }
    }

    /// Seconds since a client last used the app, while nothing holds it: `nil` while the app itself is
    /// connected, a connection watches it, or it is gone (a gone app expires by ``goneFor``).
    var unusedFor: Double? {
        links.withLock { links in
            guard links.attached.isEmpty, links.watchers.isEmpty, links.abandonedAt == nil else { return nil }
            return (ContinuousClock.now - links.lastUsed).seconds
        }
    }

    /// How many connections watch the app.
    var watcherCount: Int { links.withLock { $0.watchers.count } }

    /// The connections watching the app.
    var watchers: Set<ControlConnection> { links.withLock { $0.watchers } }

    /// Applies the settings an `open` gave; what it leaves out stays.
    /// Applies the settings an `open` gave and, with `save`, keeps them (merged with earlier ones) beside the
    /// journal for a restart.
    func apply(_ policy: AppPolicy, save: Bool) {
        apply(policy)
        guard save, policy != AppPolicy(), let policyFile else { return }
        let merged = savedPolicyValue.withLock { saved -> AppPolicy in
            saved.desiredAccuracy = policy.desiredAccuracy ?? saved.desiredAccuracy
            saved.distanceFilter = policy.distanceFilter ?? saved.distanceFilter
            saved.reducedInterval = policy.reducedInterval ?? saved.reducedInterval
            saved.reducedAccuracy = policy.reducedAccuracy ?? saved.reducedAccuracy
            saved.backgroundLocation = policy.backgroundLocation ?? saved.backgroundLocation
            saved.updates = policy.updates ?? saved.updates
            return saved
        }
        let line = ControlRequest.open(app: id, policy: merged).jsonLine
        Self.writeSmallFile(policyFile, String(decoding: line, as: UTF8.self))
    }

    /// The policy the opens set so far (what ``policyFile`` holds).
    private let savedPolicyValue = Locked(AppPolicy())

    /// Applies what a restart found in ``policyFile`` and remembers it as the app's policy so far.
    func restore(_ policy: AppPolicy) {
        savedPolicyValue.withLock { $0 = policy }
        apply(policy)
    }

    private func apply(_ policy: AppPolicy) {
        if let accuracy = policy.desiredAccuracy { manager.desiredAccuracy = accuracy }
        if let filter = policy.distanceFilter { manager.distanceFilter = filter }
        if policy.reducedInterval != nil || policy.reducedAccuracy != nil {
            var reduced = manager.reducedPolicy
            if let interval = policy.reducedInterval { reduced.interval = ValueRange.duration(clampingSeconds: interval) }
            if let accuracy = policy.reducedAccuracy { reduced.desiredAccuracy = accuracy }
            manager.reducedPolicy = reduced
        }
        if let mode = policy.backgroundLocation {
            // While the app is gone its session holds, mode off: the mode asked for is the one it gets back.
            let deferred = links.withLock { links -> Bool in
                guard links.abandonedSince != nil, links.attached.isEmpty else { return false }
                links.modeBeforeGone = mode
                return true
            }
            if !deferred { manager.allowsBackgroundLocationUpdates = mode }
        }
        switch policy.updates {
        case true?: manager.startUpdatingLocation()
        case false?: manager.stopUpdatingLocation()
        case nil: break
        }
    }

    /// The app leaves the foreground as a terminated app that was tracking does: it is suspended (from
    /// active or inactive through the background) and its fixes are held, journaled, until it comes back.
    func holdWhileGone() {
        let mode = manager.allowsBackgroundLocationUpdates
        links.withLock { $0.modeBeforeGone = $0.modeBeforeGone ?? mode }
        manager.allowsBackgroundLocationUpdates = false
        let state = application.applicationState
        guard state != .suspended, state != .notRunning else { return }
        try? application.transition(to: .suspended)
    }
}
