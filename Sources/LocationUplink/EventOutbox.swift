import Foundation
import LocationControl
import LocationCore
import Logging

/// The events an uplink sends besides fixes (region transitions), under the outbox rule: each is written
/// to disk before it is sent and leaves only when the receiver acknowledged it.
///
/// They are few (a handful a day), so the file (`OUTBOX.events`, one JSON event line each, as locationd's
/// clients read them) is rewritten whole, synced and renamed, at every change: a crash leaves the old list or
/// the new one. Bounded at ``capacity`` events, the oldest dropped and counted. In memory only without a path.
final class EventOutbox: Sendable {
    /// An event with its place in this run's sequence: acknowledgements name it.
    struct Entry: Sendable {
        let sequence: UInt64
        let event: LocationEvent
    }

    private struct State {
        var entries: [Entry] = []
        var next: UInt64 = 0
        var inFlight: Set<UInt64> = []
        var acknowledged = 0
        var refused = 0
        var dropped = 0
        var writeProblem: String?
    }

    private let state = Locked(State())
    /// The file, if the outbox has one.
    let path: String?
    /// The most events kept.
    let capacity: Int
    /// What was wrong with the file when it was opened (its good lines are kept), if anything.
    let problem: String?
    /// The largest file read: the capacity's events with long region names, several times over.
    static let fileLimit = 16 << 20

    /// Opens the outbox at `path` (or in memory), loading what a previous run left unacknowledged.
    ///
    /// - Throws: ``LocationError/Code/journalIO`` when the file is there and this user may not read it (it
    ///   may hold transitions that were never sent: it is not set aside).
    init(path: String?, capacity: Int = 1000) throws(LocationError) {
        self.path = path
        self.capacity = max(1, capacity)
        guard let path else {
            problem = nil
            return
        }
        let (events, problem, rewrite) = try Self.load(path)
        self.problem = problem
        let failure = state.withLock { state -> String? in
            for event in events.suffix(self.capacity) {
                state.entries.append(Entry(sequence: state.next, event: event))
                state.next += 1
            }
            state.dropped = max(0, events.count - self.capacity)
            // What was damaged is kept aside; the file itself holds the good events from now on.
            guard rewrite || state.dropped > 0 else { return nil }
            save(&state)
            return state.writeProblem
        }
        if let failure { throw LocationError(.journalIO, failure) }
    }

    /// What a change of the file means for the log: a write that failed (the first of a run of them), or
    /// the first that worked again.
    enum WriteNote: Sendable, Equatable {
        case failed(String)
        case recovered
    }

    /// Adds `event` behind what waits, on disk before it returns (a write that fails keeps it in memory, and
    /// says so in ``writeProblem``); what to log, when the file's state changed.
    @discardableResult
    func add(_ event: LocationEvent) -> WriteNote? {
        state.withLock { state in
            let before = state.writeProblem
            state.entries.append(Entry(sequence: state.next, event: event))
            state.next += 1
            if state.entries.count > capacity {
                let extra = state.entries.count - capacity
                for entry in state.entries.prefix(extra) { state.inFlight.remove(entry.sequence) }
                state.entries.removeFirst(extra)
                state.dropped += extra
            }
            save(&state)
            switch (before, state.writeProblem) {
            case (nil, let problem?): return .failed(problem)
            case (_?, nil): return .recovered
            default: return nil
            }
        }
    }

    /// Takes a transition an uplink's consumer delivered: journaled first, behind what waits. A write that
    /// fails keeps it in memory; the first failure is logged, and so is the write that works again.
    func take(_ event: RegionEvent, uplink name: String, logger: Logger) {
        switch add(.region(event)) {
        case .failed(let problem)?:
            logger.error("uplink \(name): \(problem); transitions are kept in memory and written once the file can be")
        case .recovered?: logger.notice("uplink \(name): its transitions are written again")
        case nil: break
        }
    }

    /// The oldest event not in flight, now in flight; nil when none waits.
    func takeUnsent() -> Entry? {
        state.withLock { state in
            guard let entry = state.entries.first(where: { !state.inFlight.contains($0.sequence) }) else { return nil }
            state.inFlight.insert(entry.sequence)
            return entry
        }
    }

    /// Takes back an event that could not be handed to the connection: it is sent again.
    func unsend(_ sequence: UInt64) {
        state.withLock { _ = $0.inFlight.remove(sequence) }
    }

    /// Every event in flight is sent again (a new connection, which did not carry the old one's messages).
    func unsendAll() {
        state.withLock { $0.inFlight.removeAll() }
    }

    /// The receiver has the event `sequence` (or refused it for good, when `refused`): it leaves the outbox.
    func acknowledge(_ sequence: UInt64, refused: Bool = false) {
        state.withLock { state in
            state.inFlight.remove(sequence)
            guard let index = state.entries.firstIndex(where: { $0.sequence == sequence }) else { return }
            state.entries.remove(at: index)
            if refused { state.refused += 1 } else { state.acknowledged += 1 }
            save(&state)
        }
    }

    /// How many events wait (in flight included), were acknowledged, refused, and dropped for room.
    var counts: (queued: Int, acknowledged: Int, refused: Int, dropped: Int) {
        state.withLock { ($0.entries.count, $0.acknowledged, $0.refused, $0.dropped) }
    }

    /// Why the last change could not be written (the events are in memory), or nil once one could.
    var writeProblem: String? { state.withLock { $0.writeProblem } }

    private func save(_ state: inout State) {
        guard let path else { return }
        var bytes: [UInt8] = []
        for entry in state.entries { bytes += JSONLineEncoder.line(entry.event) }
        if let failure = Self.replace(path, with: bytes) {
            state.writeProblem = "cannot write the uplink's events to \(path): \(failure)"
        } else {
            state.writeProblem = nil
        }
    }

    /// Writes `bytes` to a new file beside `path`, synced, and renames it over `path` (no link followed);
    /// the reason when it could not.
    private static func replace(_ path: String, with bytes: [UInt8]) -> String? {
        let temporary = path + ".tmp"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return String(cString: strerror(errno)) }
        var failure: String?
        if case .failure(let error) = SystemIO.writeAll(fd, bytes) { failure = error.description }
        if failure == nil, fsync(fd) != 0 { failure = String(cString: strerror(errno)) }
        close(fd)
        if failure == nil, rename(temporary, path) != 0 { failure = String(cString: strerror(errno)) }
        if failure != nil { unlink(temporary) }
        return failure
    }

    /// The events in the file at `path`, what was wrong with it, and whether the file must be written again
    /// with only the good events; a file that cannot be read at all is renamed `.damaged` (kept for a
    /// person), and one with lines that are not events is copied there.
    private static func load(_ path: String) throws(LocationError) -> ([LocationEvent], String?, Bool) {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT { return ([], nil, false) }
            let reason = String(cString: strerror(code))
            if code == EACCES || code == EPERM {
                throw LocationError(
                    .journalIO,
                    "cannot open \(path) (\(reason)): it may hold transitions not yet sent; give it to this user (chown) or remove it")
            }
            rename(path, path + ".damaged")
            return ([], "cannot open \(path) (\(reason); a link is not followed): kept as \(path).damaged", false)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size <= fileLimit else {
            rename(path, path + ".damaged")
            return ([], "\(path) is not a regular file of at most \(fileLimit) bytes: kept as \(path).damaged", false)
        }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        guard case .success(let count) = SystemIO.read(fd, into: &bytes, upTo: bytes.count), count == bytes.count else {
            rename(path, path + ".damaged")
            return ([], "cannot read \(path): kept as \(path).damaged", false)
        }
        var events: [LocationEvent] = []
        var bad = 0
        for line in bytes.split(separator: UInt8(ascii: "\n")) where !line.isEmpty {
            if let frame = try? LocationEventDecoder.frame(Array(line)), case .region = frame.event {
                events.append(frame.event)
            } else {
                bad += 1
            }
        }
        guard bad > 0 else { return (events, nil, false) }
        // Kept for a person; the file is written again with the good events.
        _ = replace(path + ".damaged", with: bytes)
        return (events, "\(bad) \(bad == 1 ? "line" : "lines") of \(path) are not events and are left out (the file as it was is kept as \(path).damaged)", true)
    }
}
