import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// An append-only file of held fixes, so that a crash while suspended loses nothing.
///
/// ## Format (version 1, all integers little-endian)
/// - Header: the 8 ASCII bytes `LOCJRNL1`.
/// - Then records, each: `u32 length` (1…4096) · `length` payload bytes · `u32 CRC-32` of the payload
///   (IEEE 802.3 polynomial, as in zlib and PNG).
/// - Payload: `u16 mask` (bit i set when optional field i is present: 0 altitude, 1 ellipsoidalAltitude,
///   2 horizontalAccuracy, 3 verticalAccuracy, 4 speed, 5 speedAccuracy, 6 course, 7 courseAccuracy,
///   8 climb, 9 satellitesUsed, 10 fixMode, 11 source) · `u8 flags` (bit 0 isSimulated, bit 1 fixMode is 3D) ·
///   `f64 latitude` · `f64 longitude` · `f64 timestamp` (seconds since 2001-01-01T00:00:00Z) · each present
///   `f64` field in mask order · `u32 satellitesUsed` if present · `u16 byte count` + UTF-8 `source` if present
///   · then, for mask bits 12 hdop, 13 vdop and 14 pdop, each present `f64` (added after `source` so that
///   records written before these fields existed read the same)
///   · then, only when mask bit 15 is set, an extension: `u8 extension mask` (bit 0 correctionStatus,
///   bit 1 satellitesVisible; bits 2–7 must be 0) · `u8 correction code` if present (1 gps, 2 dgps,
///   3 rtk-fixed, 4 rtk-float, 5 dead-reckoning, 6 gnss-dead-reckoning, 7 time-only, 8 simulated, 9 pps) ·
///   `u32 satellitesVisible` if present.
///
/// Bit 15 is set only when a fix has a correction status or a count of visible satellites, so a fix
/// without them is written byte for byte as before, and every record written before the extension
/// existed reads the same. A record whose extension mask has an unknown bit, or whose correction code is
/// unknown (0 or over 9), is malformed and skipped as damage would be: it cannot be read without guessing.
///
/// Every fix is written with one `write` as it is appended, so it survives the process being killed;
/// `fsync` runs at least once per ``syncInterval`` while appending and on ``sync()``, so it also survives
/// a power cut after that. On opening, a record that is damaged (its length impossible, its checksum
/// wrong) is skipped: the scan moves on to the next offset where a whole record with a matching checksum
/// starts, so every good record after damage is kept; damaged bytes before good records are saved to
/// `PATH.damaged` (added to what earlier recoveries saved there) and the journal rewritten without them, while a cut or broken tail is reported and cut
/// off. A file that is not a journal at all is moved aside to `PATH.corrupt` rather than overwritten.
///
/// A journal has one owner: opening takes an exclusive lock (`flock`) on `PATH.lock`, which holds the
/// owner's pid, for as long as the journal is open. A second process that opens the same journal is refused
/// with the holder's pid, instead of writing into a file another one truncates.
package final class LocationJournal: Sendable {
    /// The journal file.
    package let path: String
    /// The longest time an appended fix waits for `fsync`.
    package let syncInterval: Duration

    private struct State {
        var handle: FileHandle?
        var unsyncedSince: Duration?
        var syncTask: Task<Void, Never>?
        var recordCount = 0
        /// The descriptor holding the lock on `PATH.lock`; closing it releases the lock.
        var lockDescriptor: Int32 = -1
    }

    private let state: Locked<State>
    private let timeline: Timeline
    /// Called with the staged file's path before it is renamed over the journal.
    private let willReplace = Locked<(@Sendable (String) -> Void)?>(nil)

    /// Calls `hook` with the path of each rewritten journal once it is written and synced, just before it is
    /// renamed over the journal: a record that names the journal by its inode (locationd's lifecycle state
    /// record) can accept the new file too, so that no crash between the rename and the record's rewrite
    /// leaves a record naming a file that is gone. Called with the journal locked: it must not use it.
    package func onWillReplace(_ hook: @escaping @Sendable (_ staged: String) -> Void) {
        willReplace.withLock { $0 = hook }
    }
    private static let magic = Array("LOCJRNL1".utf8)
    static let maxPayload = 4096

    /// What was found in an existing journal when it was opened.
    package struct Contents: Sendable {
        /// The fixes of every valid record, in file order.
        package var locations: [Location]
        /// What was wrong with the tail (or the whole file), if anything; the valid prefix is kept.
        package var problem: LocationError?
    }

    /// What opening a journal found, when its fixes were handed over one by one instead of collected.
    package struct LoadSummary: Sendable {
        /// How many fixes the journal held (every valid record, those after damage included).
        package var count: Int
        /// What was wrong with the tail (or the whole file), if anything; the valid records are kept.
        package var problem: LocationError?
    }

    /// Opens (creating if needed) the journal at `path` and reads what it holds into an array.
    ///
    /// For a journal that may be large, ``open(path:syncInterval:clock:loading:)`` hands each fix over as it
    /// is read instead, so that memory stays bounded by what the caller keeps.
    package static func open(
        path: String, syncInterval: Duration = .seconds(1), clock: any Clock<Duration> = ContinuousClock()
    ) throws(LocationError) -> (journal: LocationJournal, contents: Contents) {
        var locations: [Location] = []
        let opened = try open(path: path, syncInterval: syncInterval, clock: clock) { locations.append($0) }
        return (opened.journal, Contents(locations: locations, problem: opened.summary.problem))
    }

    /// Opens (creating if needed) the journal at `path`, handing each fix it holds to `load` in file order.
    ///
    /// The file is read through a window of about 1 MiB, so opening a journal of any size (a sparse 6 GB
    /// file included) costs constant memory beyond what `load` keeps.
    package static func open(
        path: String, syncInterval: Duration = .seconds(1), clock: any Clock<Duration> = ContinuousClock(),
        loading load: (Location) -> Void
    ) throws(LocationError) -> (journal: LocationJournal, summary: LoadSummary) {
        // Checked before the lock file is made, so that a refused path leaves nothing beside it.
        try checkKind(path)
        let lock = try lock(path)
        do {
            let opened = try openLocked(path: path, syncInterval: syncInterval, clock: clock, load: load)
            opened.journal.state.withLock { $0.lockDescriptor = lock }
            return opened
        } catch {
            Glibc.close(lock)
            throw error
        }
    }

    /// Takes the exclusive lock on `PATH.lock` and writes this process's pid into it.
    private static func lock(_ path: String) throws(LocationError) -> Int32 {
        let lockPath = path + ".lock"
        let fd = Glibc.open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
        guard fd >= 0 else {
            throw LocationError(.journalIO, "cannot open the journal's lock file \(lockPath): \(String(cString: strerror(errno)))")
        }
        // The pid is written into it: never into another file that a hard link (or a FIFO) put under the name.
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_nlink == 1 else {
            Glibc.close(fd)
            throw LocationError(
                .journalIO, "the journal's lock file \(lockPath) is not a regular file of its own (a link to another?); remove it")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let reason = errno
            var bytes = [UInt8](repeating: 0, count: 32)
            let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
            Glibc.close(fd)
            guard reason == EWOULDBLOCK else {
                throw LocationError(.journalIO, "cannot lock journal \(path): \(String(cString: strerror(reason)))")
            }
            let holder = Int(String(decoding: bytes.prefix(max(0, count)), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
            throw LocationError(
                .journalIO,
                "journal \(path) is in use by another process (\(holder.map { "pid \($0)" } ?? "pid unknown")); "
                    + "a journal has one owner: give each daemon its own journal")
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        return fd
    }

    private static func openLocked(
        path: String, syncInterval: Duration, clock: any Clock<Duration>, load: (Location) -> Void
    ) throws(LocationError) -> (journal: LocationJournal, summary: LoadSummary) {
        try checkKind(path)
        var info = stat()
        var summary = LoadSummary(count: 0, problem: nil)
        var validLength = magic.count
        var needsHeader = true
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if fd < 0 {
            guard errno == ENOENT else { throw LocationError(.journalIO, "cannot read journal \(path): \(String(cString: strerror(errno)))") }
        } else {
            defer { Glibc.close(fd) }
            guard fstat(fd, &info) == 0 else { throw LocationError(.journalIO, "cannot read journal \(path): \(String(cString: strerror(errno)))") }
            var header = [UInt8](repeating: 0, count: magic.count)
            let headerCount: Int
            switch SystemIO.read(fd, into: &header, upTo: magic.count) {
            case .success(let count): headerCount = count
            case .failure(let failure): throw LocationError(.journalIO, "cannot read journal \(path): \(failure.reason)")
            }
            if info.st_size == 0 {
                // Created but never given its header (a crash between the two): a journal with no records.
            } else if headerCount < magic.count || header != magic {
                // A free name: an earlier file moved aside is evidence too, never overwritten.
                var aside = path + ".corrupt"
                var number = 1
                var existing = stat()
                while lstat(aside, &existing) == 0, number < 1000 {
                    aside = path + ".corrupt.\(number)"
                    number += 1
                }
                guard Glibc.rename(path, aside) == 0 else {
                    throw LocationError(.journalIO, "cannot move unreadable journal \(path) aside: \(String(cString: strerror(errno)))")
                }
                summary.problem = LocationError(.journalCorrupt, "\(path) is not a location journal (bad header); moved it to \(aside)")
            } else {
                needsHeader = false
                (summary, validLength) = try readRecords(from: fd, size: Int(info.st_size), path: path, each: load)
            }
        }
        if needsHeader {
            let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else {
                throw LocationError(.journalIO, "cannot create journal \(path): \(String(cString: strerror(errno)))")
            }
            let written = SystemIO.writeAll(fd, magic)
            Glibc.close(fd)
            if case .failure(let failure) = written {
                throw LocationError(.journalIO, "cannot create journal \(path): \(failure.reason)")
            }
        }
        guard let handle = FileHandle(forUpdatingAtPath: path) else {
            throw LocationError(.journalIO, "cannot open journal \(path) for writing: \(String(cString: strerror(errno)))")
        }
        do {
            try handle.truncate(atOffset: UInt64(validLength))
            try handle.seekToEnd()
            try handle.synchronize()
        } catch {
            throw LocationError(.journalIO, "cannot prepare journal \(path): \(Self.reason(error))")
        }
        let journal = LocationJournal(path: path, handle: handle, syncInterval: syncInterval, clock: clock)
        journal.state.withLock { $0.recordCount = summary.count }
        return (journal, summary)
    }

    /// Refuses what cannot be a journal: a FIFO would block the read for ever, a directory or device cannot
    /// hold records, and a file with a second name (a hard link) could be opened by a second owner under
    /// that name, past the lock, which is per name.
    private static func checkKind(_ path: String) throws(LocationError) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        if info.st_mode & S_IFMT != S_IFREG {
            let kind = info.st_mode & S_IFMT == S_IFDIR ? "a directory" : info.st_mode & S_IFMT == S_IFLNK ? "a symbolic link" : "not a regular file"
            throw LocationError(.journalIO, "cannot use journal \(path): it is \(kind)")
        }
        if info.st_nlink > 1 {
            throw LocationError(
                .journalIO,
                "cannot use journal \(path): it has \(info.st_nlink) names (hard links), so another daemon could open it "
                    + "under another name; a journal has one owner: give it one name")
        }
    }

    /// Reads the records of the open journal `fd` (whose header was checked) in one pass, handing each fix
    /// to `each`. Damage before good records is copied to `PATH.damaged` and the journal rewritten without
    /// it, both as the scan goes; a damaged or cut tail is left for the caller to cut off at the returned
    /// length.
    private static func readRecords(
        from fd: Int32, size: Int, path: String, each: (Location) -> Void
    ) throws(LocationError) -> (LoadSummary, validLength: Int) {
        var scanner = JournalScanner(
            size: size, describe: { "cannot read journal \(path): \($0.reason)" },
            read: { buffer, offset in SystemIO.read(fd, into: buffer, at: offset) })
        let cleanPath = path + ".tmp"
        let damagedPath = path + ".damaged"
        // Opened at the first damage that good records follow.
        var rewrite: (clean: Int32, damaged: Int32)?
        var cleanLength = 0
        var report = DamageReport()
        var pending: JournalScanner.Damage?
        var count = 0
        defer {
            if let rewrite {
                Glibc.close(rewrite.clean)
                Glibc.close(rewrite.damaged)
            }
        }
        let validLength: Int
        do {
            validLength = try scanner.scan(
                from: magic.count,
                record: { location, bytes throws(LocationError) in
                    if let damage = pending {
                        pending = nil
                        if rewrite == nil {
                            let clean = try createForWriting(cleanPath)
                            rewrite = (clean, -1)
                            rewrite?.damaged = try createForWriting(damagedPath, appending: true)
                            try copy(from: fd, 0..<damage.range.lowerBound, to: clean, path: path, destination: cleanPath)
                            cleanLength = damage.range.lowerBound
                        }
                        try copy(from: fd, damage.range, to: rewrite!.damaged, path: path, destination: damagedPath)
                        report.inner(damage)
                    }
                    each(location)
                    count += 1
                    if let rewrite {
                        try writeAll(UnsafeRawBufferPointer(bytes), to: rewrite.clean, path: cleanPath)
                        cleanLength += bytes.count
                    }
                },
                damage: { damage in
                    report.first = report.first ?? damage
                    pending = damage
                })
        } catch {
            if rewrite != nil { unlink(cleanPath) }
            throw error
        }
        let problem = report.problem(path: path, kept: count, droppedTail: pending?.range.count ?? 0)
        guard let rewrite else { return (LoadSummary(count: count, problem: problem), validLength) }
        guard fsync(rewrite.clean) == 0, fsync(rewrite.damaged) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(cleanPath)
            throw LocationError(.journalIO, "cannot sync the rewritten journal \(cleanPath): \(reason)")
        }
        guard Glibc.rename(cleanPath, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(cleanPath)
            throw LocationError(.journalIO, "cannot rewrite journal \(path): \(reason)")
        }
        syncDirectory(of: path)
        return (LoadSummary(count: count, problem: problem), cleanLength)
    }

    /// Where a journal was damaged, summed up as the scan goes.
    private struct DamageReport {
        var first: JournalScanner.Damage?
        var innerPlaces = 0
        var innerBytes = 0

        mutating func inner(_ damage: JournalScanner.Damage) {
            innerPlaces += 1
            innerBytes += damage.range.count
        }

        /// One message for all of it, or nil when the journal was whole.
        func problem(path: String, kept: Int, droppedTail: Int, savedAside: Bool = true) -> LocationError? {
            guard let first else { return nil }
            guard innerPlaces > 0 else {
                return LocationError(
                    .journalCorrupt,
                    "journal \(path): \(first.reason) at byte \(first.range.lowerBound); kept \(kept.counted("fix")), dropped \(droppedTail.counted("byte"))")
            }
            return LocationError(
                .journalCorrupt,
                "journal \(path): \(first.reason) at byte \(first.range.lowerBound); skipped \(innerBytes) damaged bytes in \(innerPlaces) "
                    + "place\(innerPlaces == 1 ? "" : "s") and kept \(kept) fixes, those after the damage included"
                    + (droppedTail > 0 ? "; dropped a cut tail of \(droppedTail) bytes" : "")
                    + (savedAside ? "; the damaged bytes are saved in \(path).damaged" : ""))
        }
    }

    /// Creates `path` anew (what was there is removed first), or with `appending` adds to it, for writing,
    /// 0600. Never through a link: not a symbolic one, nor a hard link to another file planted under the name.
    private static func createForWriting(_ path: String, appending: Bool = false) throws(LocationError) -> Int32 {
        if !appending { Glibc.unlink(path) }
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (appending ? O_APPEND : O_EXCL)
        let fd = Glibc.open(path, flags, 0o600)
        guard fd >= 0 else { throw LocationError(.journalIO, "cannot write \(path): \(String(cString: strerror(errno)))") }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_nlink == 1 else {
            Glibc.close(fd)
            throw LocationError(.journalIO, "cannot write \(path): it is not a regular file of its own (a link to another?)")
        }
        return fd
    }

    /// Copies `range` of the file `source` to `destination`, 64 KiB at a time.
    private static func copy(
        from source: Int32, _ range: Range<Int>, to destination: Int32, path: String, destination destinationPath: String
    ) throws(LocationError) {
        let piece = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 8)
        defer { piece.deallocate() }
        var offset = range.lowerBound
        while offset < range.upperBound {
            let wanted = UnsafeMutableRawBufferPointer(rebasing: piece[0..<min(piece.count, range.upperBound - offset)])
            let count: Int
            switch SystemIO.read(source, into: wanted, at: offset) {
            case .success(0): throw LocationError(.journalIO, "cannot read journal \(path): it is shorter than it was")
            case .success(let read): count = read
            case .failure(let failure): throw LocationError(.journalIO, "cannot read journal \(path): \(failure.reason)")
            }
            try writeAll(UnsafeRawBufferPointer(rebasing: piece[0..<count]), to: destination, path: destinationPath)
            offset += count
        }
    }

    /// Writes all of `bytes` to `fd`.
    private static func writeAll(_ bytes: UnsafeRawBufferPointer, to fd: Int32, path: String) throws(LocationError) {
        if case .failure(let failure) = SystemIO.writeAll(fd, bytes) {
            throw LocationError(.journalIO, "cannot write \(path): \(failure.reason)")
        }
    }

    private init(path: String, handle: FileHandle, syncInterval: Duration, clock: any Clock<Duration>) {
        self.path = path
        self.syncInterval = syncInterval
        self.timeline = Timeline(clock: clock)
        self.state = Locked(State(handle: handle))
    }

    deinit {
        state.withLock { state in
            state.syncTask?.cancel()
            try? state.handle?.close()
            if state.lockDescriptor >= 0 { Glibc.close(state.lockDescriptor) }
            state.lockDescriptor = -1
        }
    }

    /// Whether some appended fixes still wait for `fsync`.
    package var hasUnsyncedWrites: Bool { state.withLock { $0.unsyncedSince != nil } }

    /// How many records the journal holds.
    package var count: Int { state.withLock { $0.recordCount } }

    /// Appends one fix with a single write; schedules an `fsync` within ``syncInterval``.
    package func append(_ location: Location) throws(LocationError) {
        var record: [UInt8] = []
        record.reserveCapacity(160)
        Self.encodeRecord(location, into: &record)
        try appendEncoded(record, count: 1)
    }

    /// Appends several fixes with a single write.
    package func append(contentsOf locations: [Location]) throws(LocationError) {
        guard !locations.isEmpty else { return }
        var records: [UInt8] = []
        records.reserveCapacity(locations.count * 128)
        for location in locations { Self.encodeRecord(location, into: &records) }
        try appendEncoded(records, count: locations.count)
    }

    /// Appends `count` records already encoded with ``encodeRecord(_:into:)``, with a single write.
    package func append(records bytes: [UInt8], count: Int) throws(LocationError) {
        guard count > 0 else { return }
        try appendEncoded(bytes, count: count)
    }

    private func appendEncoded(_ bytes: [UInt8], count: Int) throws(LocationError) {
        let result: Result<Void, LocationError> = state.withLock { state in
            guard let handle = state.handle else {
                return .failure(LocationError(.journalIO, "journal \(path) is closed"))
            }
            do {
                try bytes.withUnsafeBytes { try handle.write(contentsOf: $0) }
            } catch {
                return .failure(LocationError(.journalIO, "cannot append to journal \(path): \(Self.reason(error))"))
            }
            state.recordCount += count
            let now = timeline.now
            if let since = state.unsyncedSince {
                if now - since >= syncInterval { syncLocked(&state) }
            } else {
                state.unsyncedSince = now
                scheduleSync(&state, at: now + syncInterval)
            }
            return .success(())
        }
        try result.get()
    }

    private func scheduleSync(_ state: inout State, at deadline: Duration) {
        state.syncTask?.cancel()
        let timeline = self.timeline
        state.syncTask = Task { [weak self] in
            do { try await timeline.sleep(until: deadline) } catch { return }
            self?.sync()
        }
    }

    /// Forces written fixes to disk now.
    package func sync() {
        state.withLock { syncLocked(&$0) }
    }

    private func syncLocked(_ state: inout State) {
        guard state.unsyncedSince != nil else { return }
        try? state.handle?.synchronize()
        state.unsyncedSince = nil
        state.syncTask?.cancel()
        state.syncTask = nil
    }

    /// Removes every record (after they were delivered) and syncs.
    package func clear() throws(LocationError) {
        let result: Result<Void, LocationError> = state.withLock { state in
            guard let handle = state.handle else { return .success(()) }
            do {
                try handle.truncate(atOffset: UInt64(Self.magic.count))
                try handle.seekToEnd()
                try handle.synchronize()
            } catch {
                return .failure(LocationError(.journalIO, "cannot clear journal \(path): \(Self.reason(error))"))
            }
            state.recordCount = 0
            state.unsyncedSince = nil
            return .success(())
        }
        try result.get()
    }

    /// Replaces every record with `locations` (the fixes held since the last delivery), atomically: a
    /// crash at any moment leaves either the old records or the new ones, never a journal missing fixes.
    ///
    /// With nothing to keep this is ``clear()``. Otherwise the new records go to `PATH.tmp`, which is
    /// synced and renamed over the journal, and the directory is synced.
    package func replaceContents(with locations: [Location]) throws(LocationError) {
        guard !locations.isEmpty else { return try clear() }
        var bytes = Self.magic
        bytes.reserveCapacity(bytes.count + locations.count * 128)
        for location in locations { Self.encodeRecord(location, into: &bytes) }
        let result: Result<Void, LocationError> = state.withLock { state in
            guard state.handle != nil else {
                return .failure(LocationError(.journalIO, "journal \(path) is closed"))
            }
            let temporary = path + ".tmp"
            do {
                // A new file of its own: never through a link planted under the name.
                let fd = try Self.createForWriting(temporary)
                let staged = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
                try bytes.withUnsafeBytes { try staged.write(contentsOf: $0) }
                try staged.synchronize()
                try staged.close()
                willReplace.value?(temporary)
                guard Glibc.rename(temporary, path) == 0 else {
                    throw LocationError(.journalIO, "cannot rename \(temporary) over the journal: \(String(cString: strerror(errno)))")
                }
                Self.syncDirectory(of: path)
                guard let handle = FileHandle(forUpdatingAtPath: path) else {
                    throw LocationError(.journalIO, "cannot reopen journal \(path)")
                }
                try handle.seekToEnd()
                try? state.handle?.close()
                state.handle = handle
            } catch let error as LocationError {
                try? FileManager.default.removeItem(atPath: temporary)
                return .failure(error)
            } catch {
                try? FileManager.default.removeItem(atPath: temporary)
                return .failure(LocationError(.journalIO, "cannot rewrite journal \(path): \(Self.reason(error))"))
            }
            state.recordCount = locations.count
            state.unsyncedSince = nil
            state.syncTask?.cancel()
            state.syncTask = nil
            return .success(())
        }
        try result.get()
    }

    /// The system's reason for a failed file operation, in plain words ("No space left on device"), never
    /// Foundation's error dump.
    static func reason(_ error: any Error) -> String {
        let nsError = error as NSError
        if nsError.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(nsError.code))) }
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(underlying.code)))
        }
        if let error = error as? LocationError { return error.message }
        return nsError.localizedDescription
    }

    /// Makes a rename in the file's directory durable.
    private static func syncDirectory(of path: String) {
        FilePathText.syncDirectory(containing: path)
    }

    /// Syncs and closes the file; later appends fail.
    package func close() {
        state.withLock { state in
            syncLocked(&state)
            try? state.handle?.close()
            state.handle = nil
            // The lock goes with the journal: another process may own it now.
            if state.lockDescriptor >= 0 { Glibc.close(state.lockDescriptor) }
            state.lockDescriptor = -1
        }
    }

    // MARK: - Records

    /// The longest record: its length, a payload with every field and a 1,024-byte source name, its checksum.
    private static let longestRecord = 4 + (2 + 1 + 3 * 8 + 9 * 8 + 4 + 2 + 1024 + 3 * 8 + 1 + 1 + 4) + 4

    /// Appends `location` as one record. Made on the stack and appended in one step: a held batch of 100,000
    /// fixes is written (to the journal, and to the wire as records) at once.
    package static func encodeRecord(_ location: Location, into bytes: inout [UInt8]) {
        withUnsafeTemporaryAllocation(byteCount: longestRecord, alignment: 8) { buffer in
            let base = buffer.baseAddress!
            var offset = 4
            func put<T: FixedWidthInteger>(_ value: T) {
                base.storeBytes(of: value.littleEndian, toByteOffset: offset, as: T.self)
                offset += MemoryLayout<T>.size
            }
            let optionals: InlineArray<9, Double?> = [
                location.altitude, location.ellipsoidalAltitude, location.horizontalAccuracy, location.verticalAccuracy,
                location.speed, location.speedAccuracy, location.course, location.courseAccuracy, location.climb,
            ]
            let dilutions: InlineArray<3, Double?> = [location.hdop, location.vdop, location.pdop]
            var mask: UInt16 = 0
            for bit in optionals.indices where optionals[bit] != nil { mask |= 1 << bit }
            if location.satellitesUsed != nil { mask |= 1 << 9 }
            if location.fixMode != nil { mask |= 1 << 10 }
            if location.source != nil { mask |= 1 << 11 }
            for bit in dilutions.indices where dilutions[bit] != nil { mask |= 1 << (12 + bit) }
            let visible = location.satellitesVisible.flatMap { $0 >= 0 ? UInt32(clamping: $0) : nil }
            var extensionMask: UInt8 = 0
            if location.correctionStatus != nil { extensionMask |= 1 }
            if visible != nil { extensionMask |= 2 }
            if extensionMask != 0 { mask |= 1 << 15 }
            put(mask)
            put((location.isSimulated ? 1 : 0) | (location.fixMode == .threeDimensional ? 2 : 0) as UInt8)
            put(location.latitude.bitPattern)
            put(location.longitude.bitPattern)
            put(location.timestamp.timeIntervalSinceReferenceDate.bitPattern)
            for bit in optionals.indices { if let value = optionals[bit] { put(value.bitPattern) } }
            if let satellites = location.satellitesUsed { put(UInt32(clamping: satellites)) }
            if var source = location.source {
                // At most 1,024 bytes of the name.
                source.withUTF8 { utf8 in
                    let kept = min(utf8.count, 1024)
                    put(UInt16(kept))
                    if kept > 0 { (base + offset).copyMemory(from: utf8.baseAddress!, byteCount: kept) }
                    offset += kept
                }
            }
            for bit in dilutions.indices { if let value = dilutions[bit] { put(value.bitPattern) } }
            if extensionMask != 0 {
                put(extensionMask)
                if let status = location.correctionStatus { put(status.code) }
                if let visible { put(visible) }
            }
            let length = offset - 4
            base.storeBytes(of: UInt32(length).littleEndian, toByteOffset: 0, as: UInt32.self)
            put(CRC32.checksum(UnsafeBufferPointer(start: (base + 4).bindMemory(to: UInt8.self, capacity: length), count: length)))
            bytes.append(contentsOf: UnsafeRawBufferPointer(start: base, count: offset))
        }
    }

    /// What ``decode(_:path:)`` found in a journal's bytes.
    package struct Decoded {
        /// The fixes of every valid record, in file order (those after damage included).
        package var locations: [Location]
        /// What was wrong, if anything.
        package var problem: LocationError?
        /// Where the valid records end when the only damage is a cut or broken tail; the file is cut there.
        package var validLength: Int
        /// Damaged stretches before the last valid record: the file must be rewritten without them.
        package var damaged: [Range<Int>]
    }

    /// Reads every record of a journal's bytes, with the same scan as opening a journal file. A damaged
    /// record (a flipped byte, a torn write) is skipped: the scan moves on to the next place where a whole
    /// record with a matching checksum starts, and keeps every good record after it.
    package static func decode(_ data: Data, path: String) -> Decoded {
        data.withUnsafeBytes { raw in
            var scanner = JournalScanner(
                size: raw.count, describe: { _ in "" },
                read: { buffer, offset in
                    let count = min(buffer.count, raw.count - offset)
                    buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + count)]))
                    return .success(count)
                })
            var locations: [Location] = []
            var damaged: [Range<Int>] = []
            var report = DamageReport()
            var pending: JournalScanner.Damage?
            // Reading from memory cannot fail.
            let validLength =
                (try? scanner.scan(
                    from: magic.count,
                    record: { location, _ in
                        if let damage = pending {
                            damaged.append(damage.range)
                            report.inner(damage)
                            pending = nil
                        }
                        locations.append(location)
                    },
                    damage: { damage in
                        report.first = report.first ?? damage
                        pending = damage
                    })) ?? magic.count
            let problem = report.problem(path: path, kept: locations.count, droppedTail: pending?.range.count ?? 0, savedAside: false)
            return Decoded(locations: locations, problem: problem, validLength: validLength, damaged: damaged)
        }
    }

    /// Why the bytes at an offset are not a record.
    package struct RecordFailure: Error {
        /// What is wrong with them, for a person.
        package var reason: String
    }

    /// The source name of the record read last, and its text: the records of a batch mostly share one, made
    /// into a `String` once.
    package struct SourceCache {
        var bytes: [UInt8] = []
        var text: String?

        /// An empty cache.
        package init() {}
    }

    /// The record starting at `offset` and where the next one starts, or why there is none.
    package static func record(
        _ bytes: UnsafeBufferPointer<UInt8>, at offset: Int
    ) -> Result<(Location, Int), RecordFailure> {
        var cache = SourceCache()
        return record(bytes, at: offset, sourceCache: &cache)
    }

    /// The record starting at `offset` and where the next one starts, or why there is none; `sourceCache`
    /// keeps the last source name read, for the records that follow.
    package static func record(
        _ bytes: UnsafeBufferPointer<UInt8>, at offset: Int, sourceCache: inout SourceCache
    ) -> Result<(Location, Int), RecordFailure> {
        guard bytes.count - offset >= 4 else { return .failure(RecordFailure(reason: "truncated record header")) }
        let length = Int(readUInt32(bytes, offset))
        guard length >= 1, length <= maxPayload else { return .failure(RecordFailure(reason: "impossible record length \(length)")) }
        guard bytes.count - offset >= 8 + length else { return .failure(RecordFailure(reason: "truncated record")) }
        let payload = UnsafeBufferPointer(rebasing: bytes[(offset + 4)..<(offset + 4 + length)])
        guard CRC32.checksum(payload) == readUInt32(bytes, offset + 4 + length) else {
            return .failure(RecordFailure(reason: "checksum mismatch"))
        }
        guard let location = decodePayload(payload, sourceCache: &sourceCache) else {
            return .failure(RecordFailure(reason: "malformed record"))
        }
        return .success((location, offset + 8 + length))
    }

    private static func readUInt32(_ bytes: UnsafeBufferPointer<UInt8>, _ offset: Int) -> UInt32 {
        var value: UInt32 = 0
        for index in 0..<4 { value |= UInt32(bytes[offset + index]) << (8 * UInt32(index)) }
        return value
    }

    private static func decodePayload(_ payload: UnsafeBufferPointer<UInt8>, sourceCache: inout SourceCache) -> Location? {
        var offset = 0
        let raw = UnsafeRawBufferPointer(payload)
        func read<T: FixedWidthInteger>(_: T.Type) -> T? {
            let size = MemoryLayout<T>.size
            guard payload.count - offset >= size else { return nil }
            let value = T(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: T.self))
            offset += size
            return value
        }
        func readDouble() -> Double? { read(UInt64.self).map(Double.init(bitPattern:)) }
        guard let mask = read(UInt16.self), let flags = read(UInt8.self),
            let latitude = readDouble(), let longitude = readDouble(), let time = readDouble(),
            time.isFinite
        else { return nil }
        var optionals = InlineArray<9, Double?>(repeating: nil)
        for bit in 0..<9 where mask & (1 << bit) != 0 {
            guard let value = readDouble() else { return nil }
            optionals[bit] = value
        }
        var satellites: Int?
        if mask & (1 << 9) != 0 {
            guard let value = read(UInt32.self) else { return nil }
            satellites = Int(value)
        }
        var source: String?
        if mask & (1 << 11) != 0 {
            guard let length = read(UInt16.self), payload.count - offset >= Int(length) else { return nil }
            let name = UnsafeBufferPointer(rebasing: payload[offset..<(offset + Int(length))])
            if let text = sourceCache.text, sourceCache.bytes.elementsEqual(name) {
                source = text
            } else {
                source = String(decoding: name, as: UTF8.self)
                sourceCache.bytes = Array(name)
                sourceCache.text = source
            }
            offset += Int(length)
        }
        var dilutions = InlineArray<3, Double?>(repeating: nil)
        for bit in 12..<15 where mask & (1 << bit) != 0 {
            guard let value = readDouble() else { return nil }
            dilutions[bit - 12] = value
        }
        var correction: CorrectionStatus?
        var visible: Int?
        if mask & 0x8000 != 0 {
            guard let extensionMask = read(UInt8.self), extensionMask & ~0x03 == 0, extensionMask != 0 else { return nil }
            if extensionMask & 1 != 0 {
                guard let code = read(UInt8.self), let status = CorrectionStatus(code: code) else { return nil }
                correction = status
            }
            if extensionMask & 2 != 0 {
                guard let value = read(UInt32.self) else { return nil }
                visible = Int(value)
            }
        }
        guard offset == payload.count else { return nil }
        let location = Location(
            latitude: latitude, longitude: longitude,
            altitude: optionals[0], ellipsoidalAltitude: optionals[1],
            horizontalAccuracy: optionals[2], verticalAccuracy: optionals[3],
            speed: optionals[4], speedAccuracy: optionals[5], course: optionals[6], courseAccuracy: optionals[7],
            climb: optionals[8], timestamp: Date(timeIntervalSinceReferenceDate: time),
            fixMode: mask & (1 << 10) == 0 ? nil : (flags & 2 != 0 ? .threeDimensional : .twoDimensional),
            correctionStatus: correction, satellitesUsed: satellites, satellitesVisible: visible,
            source: source, isSimulated: flags & 1 != 0,
            hdop: dilutions[0], vdop: dilutions[1], pdop: dilutions[2])
        return location.hasValidCoordinate ? location : nil
    }
}
