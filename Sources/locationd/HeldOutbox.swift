import Foundation
import LocationCore
import LocationControl

/// The fixes an app's session has flushed as a held batch and no consumer has acknowledged yet.
///
/// The rule it keeps: held fixes leave the daemon only when the next hop has them. A flushed batch goes
/// into the outbox (journaled beside the app's journal, as `JOURNAL.outbox`, before the manager clears its
/// own journal), and is sent to the app's watchers whole, with an id. It stays until a consumer sends
/// `ack` with that id; a consumer that dies first loses nothing: the next one to watch the app gets it.
/// A later flush adds to what is waiting, and the whole outbox goes out as one batch.
///
/// Ids are `RUN.END`: a random number for this run of the daemon and the count of fixes ever added when
/// the batch was sent. An ack removes the fixes up to that point; an ack from before a restart names
/// another run and removes nothing (the batch is sent again; consumers drop what they have by fix time).
final class HeldOutbox: Sendable {
    private struct State {
        var fixes: [Location] = []
        /// How many fixes were ever added before `fixes[0]`, in this run.
        var removed: UInt64 = 0
        /// The last write failed: the file lacks fixes held here, and the next write rewrites it whole.
        var writeFailed = false
        /// The ends of the ids handed out and not yet acknowledged: only those are taken by `acknowledge`.
        var issued: Set<UInt64> = []
        /// Why the waiting fixes were flushed, while no watcher has been sent them (a flush with nobody
        /// watching: an app that attached again, a return with no watcher); `nil` once one has.
        var unsentReason: HeldBatchReason?
        /// `fixes` as journal records, as they were appended to the file, while that is all they are (reused
        /// for watchers that take records); `nil` once fixes were dropped or acknowledged.
        var records: [UInt8]? = []
    }

    private let state = Locked(State())
    private let journal: LocationJournal?
    private let run = String(UInt64.random(in: 1...UInt64.max), radix: 36)
    /// The most fixes kept; past it the oldest are dropped (counted, as the batch does).
    let capacity: Int
    /// What was wrong with the file when it was opened (its valid records are kept), if anything.
    let problem: LocationError?

    /// Opens the outbox beside the app's journal (`JOURNAL.outbox`), loading what a previous run left there;
    /// in memory only without a journal.
    init(files: AppFiles?, capacity: Int) throws(LocationError) {
        self.capacity = max(1, capacity)
        guard let files else {
            journal = nil
            problem = nil
            return
        }
        let opened: (journal: LocationJournal, contents: LocationJournal.Contents)
        do {
            opened = try LocationJournal.open(path: files.outbox)
        } catch where error.message.contains("is in use by another process") {
            // Whoever has the outbox has the journal: say so of the journal the user named.
            throw LocationError(error.code, error.message.replacingOccurrences(of: files.outbox, with: files.journal))
        }
        journal = opened.journal
        problem = opened.contents.problem
        let kept = Array(opened.contents.locations.suffix(self.capacity))
        state.withLock { state in
            state.fixes = kept
            if !kept.isEmpty { state.records = nil }
        }
    }

    /// How many fixes wait for an acknowledgement.
    var count: Int { state.withLock { $0.fixes.count } }

    /// The journal file, if the outbox has one.
    var path: String? { journal?.path }

    /// Adds a flushed batch (oldest first) and returns everything waiting, with its id, and how many of the
    /// oldest were dropped to stay within the capacity. Journaled and synced before it returns; when the
    /// journal cannot be written the fixes are kept in memory (and sent) and the error is thrown, and the
    /// next write that works rewrites the file with everything waiting.
    ///
    /// A fix the outbox already has (the same fix time: a batch flushed again after a kill -9 between this
    /// write and the clearing of the app's journal) is not added twice.
    func add(_ locations: [Location], reason: HeldBatchReason) throws(LocationError) -> (pending: Int, id: String, dropped: Int) {
        let result: Result<(pending: Int, id: String, dropped: Int), LocationError> = state.withLock {
            state in
            if state.fixes.isEmpty { state.unsentReason = reason }
            let fresh: [Location]
            if state.fixes.isEmpty {
                fresh = locations
            } else {
                let present = SortedFixTimes(state.fixes)
                fresh = locations.filter { !present.contains($0.timestamp) }
            }
            if state.fixes.isEmpty { state.fixes = fresh } else { state.fixes.append(contentsOf: fresh) }
            let dropped = max(0, state.fixes.count - capacity)
            if dropped > 0 {
                state.fixes.removeFirst(dropped)
                state.removed += UInt64(dropped)
            }
            // Encoded once, for the file and for the watchers that take records.
            var encoded: [UInt8] = []
            if dropped == 0, state.records != nil || journal != nil {
                encoded.reserveCapacity(fresh.count * 96)
                for location in fresh { LocationJournal.encodeRecord(location, into: &encoded) }
            }
            if dropped > 0 { state.records = nil } else { state.records?.append(contentsOf: encoded) }
            do throws(LocationError) {
                if let journal {
                    if dropped > 0 || state.writeFailed {
                        try journal.replaceContents(with: state.fixes)
                    } else {
                        try journal.append(records: encoded, count: fresh.count)
                    }
                    journal.sync()
                    state.writeFailed = false
                }
            } catch {
                state.writeFailed = true
                return .failure(error)
            }
            return .success((state.fixes.count, issue(&state), dropped))
        }
        return try result.get()
    }

    /// What waits, with its id; `nil` when nothing does.
    func pending() -> (locations: [Location], id: String)? {
        state.withLock { state in state.fixes.isEmpty ? nil : (state.fixes, issue(&state)) }
    }

    /// What waits, with its id and, when the outbox has them, its journal records.
    private func pendingWithRecords() -> (locations: [Location], id: String, records: [UInt8]?, removed: UInt64)? {
        state.withLock { state in state.fixes.isEmpty ? nil : (state.fixes, issue(&state), state.records, state.removed) }
    }

    /// Notes that the waiting fixes were sent to a watcher.
    func markSent() {
        state.withLock { $0.unsentReason = nil }
    }

    /// The reason a new watcher's batch gives: why the fixes were flushed while none was sent them yet,
    /// `unacknowledged` once one was (and after a restart); notes them as sent.
    func reasonForNewWatcher() -> HeldBatchReason {
        state.withLock { state in
            defer { state.unsentReason = nil }
            return state.unsentReason ?? .unacknowledged
        }
    }

    /// Removes the fixes of the batch `id` names (and any before them); returns how many, or `nil` for an id
    /// that is not of this run or not one this outbox sent. The file is rewritten first: if that fails,
    /// nothing is removed.
    func acknowledge(_ id: String) throws(LocationError) -> Int? {
        let parts = id.split(separator: ".", omittingEmptySubsequences: false)
        // Only the form handed out (no sign, no leading zeros) names a batch.
        guard parts.count == 2, parts[0] == run, let end = UInt64(parts[1]), String(end) == parts[1] else { return nil }
        let result: Result<Int?, LocationError> = state.withLock { state in
            // Already acknowledged (by another consumer): nothing more to remove.
            guard end > state.removed else { return .success(0) }
            // An id never handed out names no batch, though it falls within the outbox.
            guard state.issued.contains(end) else { return .success(nil) }
            let count = Int(end - state.removed)
            let remaining = Array(state.fixes.dropFirst(count))
            do throws(LocationError) {
                // Atomically: a crash here leaves the outbox as it was before the ack, never emptier.
                try journal?.replaceContents(with: remaining)
            } catch {
                return .failure(error)
            }
            state.fixes = remaining
            state.records = remaining.isEmpty ? [] : nil
            state.removed = end
            state.writeFailed = false
            state.issued = state.issued.filter { $0 > end }
            return .success(count)
        }
        return try result.get()
    }

    /// The batch line of the outbox's batch `id` in `encoding`; `nil` when the outbox has moved on from `id`.
    /// Its fixes are encoded once per batch and encoding, and shared by the flush's broadcast and every later
    /// watcher; the line around them (the reason differs) is made for each.
    func batchLine(id: String, count: Int, reason: HeldBatchReason, encoding: HeldBatchEncoding) -> [UInt8]? {
        guard let encoded = encodedFixes(id: id, encoding: encoding) else { return nil }
        switch encoding {
        case .locations: return JSONLineEncoder.batchLine(count: count, reason: reason.rawValue, id: id, objects: encoded)
        case .records: return JSONLineEncoder.batchLine(count: count, reason: reason.rawValue, id: id, records: encoded)
        }
    }

    private func encodedFixes(id: String, encoding: HeldBatchEncoding) -> [UInt8]? {
        encodedPending.withLock { cached -> [UInt8]? in
            guard let (locations, pendingID, records, removed) = pendingWithRecords(), pendingID == id else { return nil }
            // An ack of an earlier batch removes fixes from the front and leaves the id as it was: the cache
            // is of the fixes waiting, which the id and how many were removed name together.
            if cached?.id != id || cached?.removed != removed { cached = (id, removed, [:]) }
            if let encoded = cached?.fixes[encoding] { return encoded }
            var encoded: [UInt8] = []
            switch encoding {
            case .locations:
                encoded.reserveCapacity(locations.count * 300)
                JSONLineEncoder.appendObjects(of: locations, to: &encoded)
            case .records:
                if let records {
                    JSONLineEncoder.appendRecords(records, to: &encoded)
                } else {
                    JSONLineEncoder.appendRecords(of: locations, to: &encoded)
                }
            }
            cached?.fixes[encoding] = encoded
            return encoded
        }
    }

    private let encodedPending = Locked<(id: String, removed: UInt64, fixes: [HeldBatchEncoding: [UInt8]])?>(nil)

    /// Syncs and closes the journal (at shutdown).
    func close() {
        journal?.sync()
        journal?.close()
    }

    /// The id of what the outbox holds now, noted as handed out.
    private func issue(_ state: inout State) -> String {
        let end = state.removed + UInt64(state.fixes.count)
        state.issued.insert(end)
        return "\(run).\(end)"
    }
}
