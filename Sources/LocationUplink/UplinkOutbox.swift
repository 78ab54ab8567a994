import Foundation
import LocationCore
import Logging

/// The fixes an uplink has taken and its receiver has not acknowledged: the outbox rule's journal.
///
/// A fix is appended to the journal before it is sent, and leaves only when the receiver acknowledged it
/// (a PUBACK), oldest first. The journal is append-only; which of its first records are acknowledged is kept
/// in a small record beside it (``OutboxCursor``, `PATH.cursor`), written after each acknowledgement, so a
/// restart sends again at most what was in flight. Once the acknowledged records are many, the journal is
/// rewritten with the rest (atomically, the cursor naming both files while it is renamed).
///
/// Bounded: past ``capacity`` fixes the oldest are dropped and counted. In memory only without a path.
final class UplinkOutbox: Sendable {
    /// A fix with its place in this run's sequence: acknowledgements name it.
    struct Entry: Sendable {
        let sequence: UInt64
        let location: Location
    }

    /// What the outbox holds and has done, for status.
    struct Counts: Sendable, Hashable {
        var queued = 0
        var inFlight = 0
        var acknowledged = 0
        /// Acknowledged as refused by the receiver (an HTTP 4xx that means the fix): dropped, not delivered.
        var refused = 0
        var droppedFull = 0
        /// Dropped for age: more than `maxAge` seconds older than the newest fix taken.
        var droppedOld = 0
    }

    private struct State {
        /// Unacknowledged fixes, oldest first; `fixes[head]` has the sequence `base`.
        var fixes: [Location] = []
        var head = 0
        var base: UInt64 = 0
        /// The next sequence to send (from `base` up to it, fixes are in flight or acknowledged out of order).
        var next: UInt64 = 0
        /// Acknowledged out of order, beyond `base`.
        var acknowledgedAhead: Set<UInt64> = []
        /// Those of `acknowledgedAhead` the receiver refused (counted as refused once they leave, not before).
        var refusedAhead: Set<UInt64> = []
        /// How many of the journal's first records are acknowledged (or dropped).
        var fileDone = 0
        /// An append failed: the file lacks fixes held here, so it is rewritten whole before anything else.
        var writeFailed = false
        var counts = Counts()
    }

    private let state = Locked(State())
    private let journal: LocationJournal?
    private let cursor: OutboxCursor?
    /// The most fixes kept.
    let capacity: Int
    /// Fixes more than this many seconds older than the newest one taken are dropped, oldest first; `nil` for
    /// no bound by age. Counted in fix time, from the newest fix's time or the system clock's, whichever is
    /// earlier: a clock stepped forward, or one fix dated in the future, drops nothing that should stay.
    let maxAge: Double?
    private let now: @Sendable () -> Date
    /// The journal's path, if it has one.
    var path: String? { journal?.path }
    /// What was wrong with the files when they were opened (their valid records are kept), if anything.
    let problem: LocationError?

    /// Rewrites the journal once this many records at its start are acknowledged (and at least as many as
    /// wait): each rewrite copies what waits, so rewriting less often costs little disk and no time.
    static let compactionThreshold = 1024

    /// Opens (or creates) the outbox at `path`, loading what a previous run left unacknowledged.
    init(
        path: String?, capacity: Int, maxAge: Double? = nil, now: @escaping @Sendable () -> Date = { Date() }
    ) throws(LocationError) {
        self.capacity = max(1, capacity)
        self.maxAge = maxAge
        self.now = now
        guard let path else {
            journal = nil
            cursor = nil
            problem = nil
            return
        }
        let opened = try LocationJournal.open(path: path)
        journal = opened.journal
        let cursor: OutboxCursor
        do throws(LocationError) { cursor = try OutboxCursor(path: path + ".cursor") } catch {
            opened.journal.close()
            throw error
        }
        self.cursor = cursor
        var problems = opened.contents.problem.map { [$0.message] } ?? []
        let loaded = opened.contents.locations
        var done = 0
        switch cursor.acknowledged(journalPath: path) {
        case .count(let count): done = min(count, loaded.count)
        case .unknown(let reason):
            if let reason { problems.append("\(reason); every fix in \(path) is sent again") }
        }
        var fixes = Array(loaded.dropFirst(done))
        let dropped = max(0, fixes.count - self.capacity)
        if dropped > 0 { fixes.removeFirst(dropped) }
        var tooOld = 0
        if let maxAge, let newest = fixes.last?.timestamp {
            let reference = min(newest, now())
            // The newest stays: at most the fixes before it go.
            tooOld = fixes.dropLast().prefix { reference.timeIntervalSince($0.timestamp) > maxAge }.count
            fixes.removeFirst(tooOld)
        }
        problem = problems.isEmpty ? nil : LocationError(.journalCorrupt, problems.joined(separator: "; "))
        state.withLock { state in
            state.fixes = fixes
            state.fileDone = done + dropped + tooOld
            state.counts.droppedFull = dropped
            state.counts.droppedOld = tooOld
        }
        // The record names this file from now on, whatever it named before.
        cursor.write(journalPath: path, acknowledged: done + dropped + tooOld, staged: nil)
        opened.journal.onWillReplace { staged in
            // Before the rename: the record accepts the new file (with nothing acknowledged in it) too.
            cursor.write(journalPath: path, acknowledged: nil, staged: staged, sync: true)
        }
    }

    /// Adds a fix behind everything waiting; journaled before it returns. When the journal cannot be written
    /// (a full disk) the fix is kept in memory and the error thrown; the next write that works rewrites the
    /// journal whole.
    func add(_ location: Location) throws(LocationError) {
        let result: Result<Void, LocationError> = state.withLock { state in
            let droppedOldBefore = state.counts.droppedOld
            state.fixes.append(location)
            let full = max(0, state.fixes.count - state.head - capacity)
            if full > 0 {
                Self.dropOldest(full, &state)
                state.counts.droppedFull += full
            }
            if let maxAge {
                let reference = min(location.timestamp, now())
                var old = 0
                // Never the fix just taken: a fix dated long before the one before it is still sent.
                while state.head + old < state.fixes.count - 1,
                    reference.timeIntervalSince(state.fixes[state.head + old].timestamp) > maxAge
                {
                    old += 1
                }
                if old > 0 {
                    Self.dropOldest(old, &state)
                    state.counts.droppedOld += old
                }
            }
            guard let journal else { return .success(()) }
            do throws(LocationError) {
                if state.writeFailed {
                    try rewrite(&state)
                } else {
                    try journal.append(location)
                }
            } catch {
                state.writeFailed = true
                return .failure(error)
            }
            // Fixes dropped for room or age are as good as acknowledged: the cursor says so at once, so that a
            // restart does not send them again.
            if !compactIfDue(&state), full > 0 || state.counts.droppedOld > droppedOldBefore, !state.writeFailed {
                cursor?.write(journalPath: journal.path, acknowledged: state.fileDone, staged: nil)
            }
            return .success(())
        }
        try result.get()
    }

    /// Opens the outbox of the uplink to `endpoint` (at `path`, or in memory), with its bounds, and logs what
    /// is wrong with its files and how many fixes an earlier run left waiting for the `receiver`.
    static func open(for endpoint: UplinkEndpoint, path: String?, receiver: String, logger: Logger) throws(LocationError) -> UplinkOutbox {
        let outbox = try UplinkOutbox(path: path, capacity: endpoint.queue, maxAge: endpoint.maxAge)
        if let problem = outbox.problem { logger.warning("uplink \(endpoint.name): \(problem.message)") }
        let pending = outbox.counts.queued
        if pending > 0 {
            logger.info("uplink \(endpoint.name): \(pending) \(pending == 1 ? "fix" : "fixes") from an earlier run wait for the \(receiver)")
        }
        return outbox
    }

    /// Takes a fix an uplink's consumer delivered (unless reported worse than `accuracy` metres): journaled
    /// first, behind what waits. A write that fails keeps the fix in memory; the first failure is logged, and
    /// so is the write that works again. ``writeProblem`` says what failed meanwhile.
    func take(_ location: Location, accuracy: Double?, uplink name: String, logger: Logger) {
        if let accuracy, let reported = location.horizontalAccuracy, reported > accuracy { return }
        do throws(LocationError) {
            try add(location)
            if writeProblem.withLock({ $0.take() }) != nil {
                logger.notice("uplink \(name): the outbox is written again")
            }
        } catch {
            let first = writeProblem.withLock { problem -> Bool in
                defer { problem = error.message }
                return problem == nil
            }
            if first {
                logger.error("uplink \(name): \(error.message); fixes are kept in memory and written once the outbox can be")
            }
        }
    }

    /// Why the last fix taken could not be written (the fixes are in memory), or nil once one could.
    let writeProblem = Locked<String?>(nil)

    /// How many fixes the outbox at `path` holds that its cursor does not count as acknowledged, read without
    /// changing it; nil when it cannot be read (or another locationd has it open).
    static func waitingCount(path: String) -> Int? {
        var count = 0
        guard let opened = try? LocationJournal.open(path: path, loading: { _ in count += 1 }) else { return nil }
        defer { opened.journal.close() }
        var info = stat()
        guard lstat(path + ".cursor", &info) == 0 else { return count }
        guard let cursor = try? OutboxCursor(path: path + ".cursor") else { return count }
        switch cursor.acknowledged(journalPath: path) {
        case .count(let done): return max(0, count - done)
        case .unknown: return count
        }
    }

    /// Drops the `count` oldest fixes, in flight or not: an acknowledgement that comes for one later changes nothing.
    private static func dropOldest(_ count: Int, _ state: inout State) {
        state.head += count
        state.base += UInt64(count)
        state.next = max(state.next, state.base)
        state.acknowledgedAhead = state.acknowledgedAhead.filter { $0 >= state.base }
        state.refusedAhead = state.refusedAhead.filter { $0 >= state.base }
        state.fileDone += count
        trim(&state)
    }

    /// Up to `window` fixes past what is in flight (counted from the oldest unacknowledged), oldest first,
    /// noted as sent.
    func takeUnsent(window: Int) -> [Entry] {
        state.withLock { state in
            let limit = state.base + UInt64(max(1, window))
            let available = state.base + UInt64(state.fixes.count - state.head)
            var entries: [Entry] = []
            while state.next < min(limit, available) {
                let index = state.head + Int(state.next - state.base)
                if !state.acknowledgedAhead.contains(state.next) {
                    entries.append(Entry(sequence: state.next, location: state.fixes[index]))
                }
                state.next += 1
            }
            return entries
        }
    }

    /// Takes back fixes from `sequence` on that could not be handed to the connection: they are sent again.
    func unsend(from sequence: UInt64) {
        state.withLock { state in
            if sequence >= state.base, sequence < state.next { state.next = sequence }
        }
    }

    /// Notes the acknowledgement of `sequences` (as refused by the receiver, if `refused`); the acknowledged
    /// prefix leaves the outbox. A sequence no longer waiting (dropped, or acknowledged before) changes nothing.
    func acknowledge(_ sequences: [UInt64], refused: Bool = false) {
        state.withLock { state in
            var advanced = 0
            for sequence in sequences where sequence >= state.base && sequence < state.next {
                state.acknowledgedAhead.insert(sequence)
                if refused { state.refusedAhead.insert(sequence) }
            }
            while state.acknowledgedAhead.remove(state.base) != nil {
                if state.refusedAhead.remove(state.base) != nil {
                    state.counts.refused += 1
                } else {
                    state.counts.acknowledged += 1
                }
                state.base += 1
                state.head += 1
                advanced += 1
            }
            guard advanced > 0 else { return }
            state.fileDone += advanced
            Self.trim(&state)
            guard let path = journal?.path, !state.writeFailed else { return }
            if !compactIfDue(&state) {
                cursor?.write(journalPath: path, acknowledged: state.fileDone, staged: nil)
            }
        }
    }

    /// Drops the fixes before `head` from memory now and then (not on every acknowledgement or drop, which
    /// would shift the array each time): a full outbox whose broker is away for days stays at its capacity.
    private static func trim(_ state: inout State) {
        guard state.head > 4096, state.head * 2 > state.fixes.count else { return }
        state.fixes.removeFirst(state.head)
        state.head = 0
    }

    /// Counts for status.
    var counts: Counts {
        state.withLock { state in
            var counts = state.counts
            counts.queued = state.fixes.count - state.head
            // Acknowledged ahead of the oldest, but not sent again since an unsend moved `next` back: not in flight.
            let next = state.next
            counts.inFlight = max(0, Int(next - state.base) - state.acknowledgedAhead.filter { $0 < next }.count)
            return counts
        }
    }

    /// How many fixes the outbox holds in memory, acknowledged or dropped ones not yet let go included.
    var memoryCount: Int { state.withLock { $0.fixes.count } }

    /// Syncs and closes the journal (at shutdown).
    func close() {
        journal?.sync()
        journal?.close()
    }

    /// Rewrites the journal with what waits, when enough of it is acknowledged; whether it did.
    @discardableResult
    private func compactIfDue(_ state: inout State) -> Bool {
        guard journal != nil, !state.writeFailed, state.fileDone >= Self.compactionThreshold,
            state.fileDone >= state.fixes.count - state.head
        else { return false }
        do throws(LocationError) { try rewrite(&state) } catch {
            // Said in status; the next fix taken rewrites the outbox whole.
            state.writeFailed = true
            writeProblem.withLock { $0 = $0 ?? "cannot compact the outbox: \(error.message)" }
            return false
        }
        return true
    }

    /// Replaces the journal with exactly the unacknowledged fixes, and the cursor with "none acknowledged".
    private func rewrite(_ state: inout State) throws(LocationError) {
        guard let journal else { return }
        let waiting = Array(state.fixes[state.head...])
        if waiting.isEmpty {
            // Truncated in place, the same file: the cursor must say nothing is acknowledged before anything
            // is appended again (nothing is: this runs under the outbox's lock).
            try journal.clear()
        } else {
            try journal.replaceContents(with: waiting)
        }
        state.fixes = waiting
        state.head = 0
        state.fileDone = 0
        state.writeFailed = false
        cursor?.write(journalPath: journal.path, acknowledged: 0, staged: nil, sync: true)
    }
}
