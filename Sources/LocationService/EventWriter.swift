import Foundation
import LocationControl
import LocationCore
import LocationGPX
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Writes ``LocationEvent``s to standard output or a file in one ``OutputFormat``.
///
/// Text and JSON lines are buffered and written in large pieces; with `flushEachEvent` (live output)
/// every event is written at once, GPX points included, so a file holds every point as soon as it is
/// written. JSON lines carry every event, each typed. In text, GPX and NMEA only the locations go to the
/// output; the other events (state, batch, source, error lines) go to standard error as text, so a text
/// output holds one line per location, a GPX output stays a valid document and an NMEA output holds
/// sentences only. ``finish()`` must be called to complete the output (it closes the GPX document);
/// it is safe to call more than once.
///
/// A path is opened itself (see `OutputFile`): never replaced, an existing file keeps its mode, owner and
/// links, a new one is created 0600. When the reader goes away (a closed pipe) or a write fails, the writer
/// stops at once and ``stops`` yields, so that a command can end instead of working for nobody.
package final class EventWriter: Sendable {
    /// Why the output ended early.
    package struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// The kinds of early end.
        package enum Kind: Sendable, Equatable {
            /// The reader went away (a closed pipe): not an error for the command, which ends quietly.
            case readerGone
            /// A write failed: a full disk, an I/O error.
            case writeFailed
            /// The content cannot be written in the format (a time GPX cannot hold).
            case invalidContent
            /// A rotating log's next file could not be opened, for the reason this code names (as the
            /// first file's would have been: see `CommandFailure.openingOutput`).
            case cannotOpen(LocationError.Code)
        }

        /// The kind.
        package var kind: Kind
        /// One line for a person, naming the output and the system's reason.
        package var message: String

        /// `message`.
        package var description: String { message }
    }

    /// The format written.
    package let format: OutputFormat
    /// The output file, or `nil` for standard output.
    package let path: String?

    /// How a logger's output treats the file and the fixes: what `--append`, `--split-gap` and `--min-move` ask.
    package struct LogOptions: Sendable, Equatable {
        /// Add to an existing file instead of replacing it: JSON lines, text and NMEA after what it holds; a
        /// GPX document continued with a new track in place of its `</gpx>`. The file is locked meanwhile.
        package var append = false
        /// GPX: a gap in fix time longer than this starts a new track segment.
        package var splitGap: Double?
        /// A fix closer than this many metres to the last one written is not written.
        package var minimumMove: Double?
        /// Move to a new file by day, hour or size; the path is then a pattern (see ``LogRotation``).
        package var rotation: LogRotation?

        /// Options that change nothing.
        package init(append: Bool = false, splitGap: Double? = nil, minimumMove: Double? = nil, rotation: LogRotation? = nil) {
            self.append = append
            self.splitGap = splitGap
            self.minimumMove = minimumMove
            self.rotation = rotation
        }
    }

    private struct State {
        /// The file written now (it changes when a rotating log moves to its next file).
        var output: OutputFile
        /// GPX to a regular file: the closing tags follow whatever reached the file, so the file is a
        /// complete document at every moment (a kill -9 or a power cut leaves a valid file); the next
        /// points overwrite them.
        var keepsDocumentClosed = false
        /// The GPX bytes written to the file when the closing tags were last written after them.
        var closedAtBytes = 0
        /// Where the closing tags were last written, and which: a write that fails later (a full disk) is
        /// cut back to there and they are written again, so the file stays a whole document.
        var lastClose: (offset: Int, tags: [UInt8])?
        /// A rotating log's current file name, and its number for size rotation.
        var fileName: String?
        var fileIndex = 0
        /// A rotating log before its first file: `output` is not open (it stands for standard output),
        /// and what is written waits in `buffer`.
        var waitsForFile = false
        var buffer: [UInt8] = []
        var gpx: GPXWriter?
        var locations = 0
        /// The last location kept, for `minimumMove`.
        var lastWritten: Location?
        /// The fix time of the last GPX point written, for `splitGap`.
        var lastPointTime: Date?
        /// Locations left out for `minimumMove`.
        var skipped = 0
        var finished = false
        var failure: Failure?
    }

    private let state: Mutex<State>
    /// The result of the GPX writer's last write, which its own error does not carry, and how many bytes
    /// it has written to the current file.
    private let lastGPXWrite = Locked((result: OutputFile.WriteResult.written, bytes: 0))
    private let flushEachEvent: Bool
    /// Written before each line on standard error: a progress display's line is cleared first.
    private let commentaryPrefix: String
    private let creator: String
    private let stopped = AsyncStream.makeStream(of: Void.self)
    private static let flushThreshold = 1 << 16
    private let log: LogOptions
    /// The gzip children of a rotating log not reaped yet.
    private let compressions = Locked<[pid_t]>([])

    /// Opens the output; throws ``LocationError/Code/invalidData`` naming the file and the system's reason
    /// if it cannot be opened (a directory, a read-only place, permission).
    ///
    /// With `clearsProgressLine`, each line on standard error first clears the terminal line, where a
    /// progress display (`replay` on a terminal) may stand.
    package init(
        format: OutputFormat, path: String?, flushEachEvent: Bool, clearsProgressLine: Bool = false, creator: String = "locationctl",
        log: LogOptions = LogOptions()
    ) throws(LocationError) {
        self.format = format
        self.path = path
        self.flushEachEvent = flushEachEvent
        self.log = log
        self.creator = creator
        commentaryPrefix = clearsProgressLine ? "\r\u{1B}[K" : ""
        var initial: State
        if let rotation = log.rotation {
            // The first fix decides the first file (a replay of last year's track writes last year's
            // files); until then nothing is opened, and JSON lines wait. A directory that cannot take the
            // files is an error now, not at the first fix.
            let directory = FilePathText.parent(of: rotation.pattern)
            var info = stat()
            guard stat(directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, access(directory, W_OK | X_OK) == 0 else {
                let reason = errno == 0 ? "not a directory" : String(cString: strerror(errno))
                throw LocationError(.invalidData, "cannot write log files in \(directory): \(reason)")
            }
            initial = State(output: OutputFile())
            initial.waitsForFile = true
        } else {
            initial = State(output: OutputFile())
            if let path {
                try Self.open(path, existing: log.append ? (format == .gpx ? .continueGPX : .append) : .truncate, into: &initial, format: format, flushEachEvent: flushEachEvent, creator: creator, lastWrite: lastGPXWrite)
            } else {
                try Self.open(nil, existing: .truncate, into: &initial, format: format, flushEachEvent: flushEachEvent, creator: creator, lastWrite: lastGPXWrite)
            }
        }
        if format != .gpx { initial.buffer.reserveCapacity(Self.flushThreshold + 4096) }
        let output = initial.output
        state = Mutex(initial)
        // A rotating log writes files only; standard output is not its reader.
        if log.rotation == nil { watchForReaderGone(output) }
    }

    /// Opens `path` (standard output for `nil`) as the state's output, with a GPX writer for GPX.
    private static func open(
        _ path: String?, existing: OutputFile.Existing, into state: inout State, format: OutputFormat, flushEachEvent: Bool,
        creator: String, lastWrite: Locked<(result: OutputFile.WriteResult, bytes: Int)>, regularFileOnly: Bool = false
    ) throws(LocationError) {
        let output = try path.map { path throws(LocationError) in try OutputFile(path: path, existing: existing, regularFileOnly: regularFileOnly) } ?? OutputFile()
        state.output = output
        if let cut = output.repairedCut {
            writeToStandardError(
                "── log: \(TerminalText.escaped(output.name)) ended inside a track point (a full disk, or a crash while it was written): "
                    + "\(cut.counted("byte")) after its last whole point dropped, and its track closed\n")
        }
        state.keepsDocumentClosed = format == .gpx && output.isRegularFile
        state.closedAtBytes = 0
        state.lastClose = nil
        state.gpx = nil
        lastWrite.withLock { $0 = (.written, 0) }
        guard format == .gpx else { return }
        let sink: ([UInt8]) throws -> Void = { bytes in
            let result = output.write(bytes)
            lastWrite.withLock { $0 = (result, $0.bytes + bytes.count) }
            if result != .written { throw CancellationError() }
        }
        do throws(GPXError) {
            state.gpx = output.continuesDocument
                ? GPXWriter.continuingDocument(declaresExtensionNamespace: !output.declaresExtensions, sink: sink)
                : try GPXWriter(creator: creator, sink: sink)
        } catch {
            _ = output.close()
            throw LocationError(.invalidData, "cannot start the GPX output: \(error.message)")
        }
        // A whole document from the start: the header and the closing tags are in the file before any
        // point (a logger killed before its first fix leaves an empty document, not an empty file).
        guard state.keepsDocumentClosed, let gpx = state.gpx else { return }
        do throws(GPXError) { try gpx.flush() } catch {
            _ = output.close()
            throw LocationError(.invalidData, failureOf(lastWrite.value.result, output)?.message ?? "cannot write to \(output.name)")
        }
        state.closedAtBytes = lastWrite.value.bytes
        if let failure = closeProvisionally(&state, tags: gpx.closingTags) {
            _ = output.close()
            throw LocationError(.invalidData, failure.message)
        }
    }

    /// Writes the closing tags after what is in the file, to be overwritten by the next points; on a failure,
    /// cuts the file back to the last whole document.
    private static func closeProvisionally(_ state: inout State, tags: [UInt8]) -> Failure? {
        let offset = lseek(state.output.descriptor, 0, SEEK_CUR)
        if let failure = failureOf(state.output.writeProvisionally(tags), state.output) {
            restoreLastClose(&state)
            return failure
        }
        if offset >= 0 { state.lastClose = (Int(offset), tags) }
        return nil
    }

    /// After a failed write to a GPX file kept closed: the file cut after the last whole point the write
    /// got into it, or else back to where its closing tags were last written, and the closing tags written
    /// there (the cut frees the room they need), so a full disk leaves a whole document holding every point
    /// that fit.
    private static func restoreLastClose(_ state: inout State) {
        guard state.keepsDocumentClosed, let last = state.lastClose else { return }
        // Read through a descriptor of its own: the output's may be write-only.
        let reader = Glibc.open("/proc/self/fd/\(state.output.descriptor)", O_RDONLY | O_CLOEXEC)
        if reader >= 0 {
            defer { close(reader) }
            var info = stat()
            if fstat(reader, &info) == 0, case .afterLastPoint(let end, _)? = GPXContinuation.find(in: reader, size: Int(info.st_size)),
                end > last.offset
            {
                _ = state.output.restore(closing: GPXContinuation.closingAfterLastPoint + Array("</gpx>\n".utf8), at: end)
                return
            }
        }
        _ = state.output.restore(closing: last.tags, at: last.offset)
    }

    /// Moves a rotating log to the file `event` belongs in, when that is another: by time, the file of its
    /// first fix (other events stay in the current file); by size, the next number once the current file
    /// has reached the size. Returns false when the output has failed.
    private func rotate(_ state: inout State, _ rotation: LogRotation, for event: LocationEvent) -> Bool {
        var first: Date?
        if case .locations(let locations, _) = event { first = locations.first?.timestamp }
        if state.waitsForFile {
            guard let first else { return true }
            let (name, index) = rotation.currentFile(at: first)
            return switchFile(&state, to: name, index: index, rotation: rotation)
        }
        var next: (name: String, index: Int)?
        switch rotation.period {
        case .daily, .hourly:
            if let first, case let name = rotation.fileName(at: first), name != state.fileName { next = (name, 1) }
        case .size(let limit):
            // What the file holds and what waits to be written to it: a file moves on at its size, not
            // only at a flush (64 KiB apart when replaying as fast as possible).
            var info = stat()
            let waiting = state.buffer.count + (state.gpx?.bufferedByteCount ?? 0)
            if fstat(state.output.descriptor, &info) == 0, Int(info.st_size) + waiting >= limit {
                let index = state.fileIndex + 1
                next = (rotation.fileName(at: first ?? Date(), index: index), index)
            }
        }
        guard let next else { return state.failure == nil }
        return switchFile(&state, to: next.name, index: next.index, rotation: rotation)
    }

    /// Closes the current file validly and continues in `name` (adding to what it holds), then deletes
    /// the files beyond `--keep` and compresses the one left, with `--gzip`.
    private func switchFile(_ state: inout State, to name: String, index: Int, rotation: LogRotation) -> Bool {
        let previous = state.fileName
        let waiting = state.waitsForFile ? state.buffer : []
        if state.waitsForFile {
            state.buffer.removeAll(keepingCapacity: true)
        } else {
            closeDocument(&state)
        }
        guard state.failure == nil else { return false }
        do throws(LocationError) {
            try Self.open(
                name, existing: format == .gpx ? .continueGPX : .append, into: &state, format: format, flushEachEvent: flushEachEvent,
                creator: creator, lastWrite: lastGPXWrite, regularFileOnly: true)
        } catch {
            state.failure = Failure(kind: .cannotOpen(error.code), message: error.message)
            return false
        }
        state.fileName = name
        state.fileIndex = index
        state.lastPointTime = nil
        state.waitsForFile = false
        state.buffer = waiting
        for path in rotation.prune(keeping: name) {
            Self.writeToStandardError(commentaryPrefix + "── log: deleted \(TerminalText.escaped(path)) (--keep \(rotation.keep ?? 0))\n")
        }
        if rotation.gzip { compressClosedFiles(before: name, rotation) }
        _ = previous
        return true
    }

    /// Compresses a closed file with gzip in the background (gzip keeps its mode and leaves an existing
    /// `.gz` alone: a file that cannot be compressed stays as it is, and nothing is lost). The child is
    /// reaped at the next rotation or at the end, so a logger that runs for a year leaves no zombies.
    private func compress(_ path: String) {
        reapCompressions(waiting: false)
        guard let gzip = ["/usr/bin/gzip", "/bin/gzip"].first(where: { (path: String) in access(path, X_OK) == 0 }) else {
            Self.writeToStandardError("── log: gzip is not installed; \(TerminalText.escaped(path)) stays uncompressed\n")
            return
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let words: [String] = [gzip, "-n", "--", path]
        let arguments: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        defer { arguments.forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, gzip, &actions, nil, arguments, environ)
        guard status == 0 else {
            Self.writeToStandardError("── log: cannot run gzip for \(TerminalText.escaped(path)): \(String(cString: strerror(status)))\n")
            return
        }
        compressions.withLock { $0.append(pid) }
    }

    /// Compresses the log's files that come before `current` and are not compressed yet: the one just
    /// left, and those an earlier run left (a logger stopped every night would otherwise never compress
    /// one). A file another program holds the lock of (another logger writing it) is left alone.
    private func compressClosedFiles(before current: String, _ rotation: LogRotation) {
        for path in rotation.files() where !path.hasSuffix(".gz") && path != current {
            guard path.compare(current, options: .numeric) == .orderedAscending else { continue }
            let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            guard fd >= 0 else { continue }
            let free = flock(fd, LOCK_EX | LOCK_NB) == 0
            close(fd)
            if free { compress(path) }
        }
    }

    /// Reaps the gzip children that have ended (all of them, waiting up to 30 s, with `waiting`).
    private func reapCompressions(waiting: Bool) {
        let deadline = ContinuousClock.now + .seconds(30)
        compressions.withLock { pids in
            pids.removeAll { pid in
                var status: Int32 = 0
                while true {
                    let result = waitpid(pid, &status, waiting ? 0 : WNOHANG)
                    if result == -1, errno == EINTR { continue }
                    if result == 0, waiting, ContinuousClock.now < deadline { usleep(10_000); continue }
                    return result != 0
                }
            }
        }
    }

    /// With rotation, closes the current file validly and opens it again (adding to it), for logrotate or
    /// a person who moved it away: SIGHUP. Without rotation it does nothing.
    package func reopen() {
        guard log.rotation != nil else { return }
        let stoppedNow = withState { state -> Bool in
            guard !state.finished, state.failure == nil, let name = state.fileName, let rotation = log.rotation else { return false }
            return !switchFile(&state, to: name, index: state.fileIndex, rotation: rotation)
        }
        if stoppedNow { stopped.continuation.yield() }
    }

    /// Completes the document of the state's output and closes it; the first failure, if any.
    private func closeDocument(_ state: inout State) {
        flush(&state)
        if let gpx = state.gpx, state.failure == nil {
            do throws(GPXError) { try gpx.finish() } catch {
                state.failure = gpxFailure(error, state.output)
                Self.restoreLastClose(&state)
            }
            if state.keepsDocumentClosed, state.failure == nil { state.failure = Self.failureOf(state.output.truncateAtOffset(), state.output) }
        }
        state.gpx = nil
        if case .failed(let reason) = state.output.close(), state.failure == nil {
            state.failure = Failure(kind: .writeFailed, message: "cannot write to \(state.output.name): \(reason)")
        }
    }

    /// A reader of a pipe or socket that goes away is otherwise noticed only at the next write, which a
    /// quiet stream (a suspended app, an ended replay) may never make: `watch | head -3` would then wait
    /// forever. A thread polls the descriptor for the error or hang-up that the reader's close raises, and
    /// stops the output at once.
    private func watchForReaderGone(_ output: OutputFile) {
        var info = stat()
        guard fstat(output.descriptor, &info) == 0,
            info.st_mode & S_IFMT == S_IFIFO || info.st_mode & S_IFMT == S_IFSOCK
        else { return }
        let descriptor = output.descriptor
        let name = output.name
        let thread = Thread { [weak self] in
            var fds = [pollfd(fd: descriptor, events: 0, revents: 0)]
            while true {
                guard let writer = self, !writer.withState({ $0.finished || $0.failure != nil }) else { return }
                fds[0].revents = 0
                let ready = poll(&fds, 1, 200)
                guard ready > 0, fds[0].revents & Int16(POLLERR | POLLHUP) != 0 else { continue }
                let stoppedNow = writer.withState { state -> Bool in
                    guard !state.finished, state.failure == nil else { return false }
                    state.failure = Failure(kind: .readerGone, message: "the reader of \(name) went away")
                    return true
                }
                if stoppedNow { writer.stopped.continuation.yield() }
                return
            }
        }
        thread.name = "output reader watch"
        thread.start()
    }

    deinit {
        try? finish()
    }

    /// `state.withLock`, with the critical section shown to ThreadSanitizer (see
    /// `ThreadSanitizerAnnotations`; nothing in other builds). `State` holds a writer that is not
    /// `Sendable`, so it cannot be a `Locked`.
    private func withState<Result: Sendable>(_ body: (inout State) -> Result) -> Result {
        state.withLock { state in
            ThreadSanitizerAnnotations.acquired(self)
            defer { ThreadSanitizerAnnotations.releasing(self) }
            return body(&state)
        }
    }

    /// How many locations were written.
    package var locationCount: Int { withState { $0.locations } }

    /// Yields once when the output stops early: the reader went away, or a write failed.
    package var stops: AsyncStream<Void> { stopped.stream }

    /// Why the output stopped early, if it did.
    package var failure: Failure? { withState { $0.failure } }

    /// Writes one event (nothing once the output has stopped). In JSON, `line` is the event as it came (a
    /// watch of locationd): written as it is rather than encoded again, so a batch of 100,000 fixes is copied,
    /// not rewritten.
    package func write(_ event: LocationEvent, line: [UInt8]? = nil) {
        let stoppedNow = withState { state -> Bool in
            guard !state.finished, state.failure == nil else { return false }
            if let rotation = log.rotation, !rotate(&state, rotation, for: event) { return true }
            var event = event
            var line = line
            var locations: [Location] = []
            var isHeld = false
            if case .locations(let delivered, let delivery) = event {
                locations = delivered
                if case .held = delivery { isHeld = true }
                if let minimum = log.minimumMove {
                    locations = Self.moved(locations, atLeast: minimum, after: &state.lastWritten)
                    state.skipped += delivered.count - locations.count
                    // Nothing left to write: not even the batch's line.
                    if locations.isEmpty { return false }
                    if locations.count != delivered.count {
                        event = .locations(locations, delivery)
                        line = nil
                    }
                }
            }
            state.locations += locations.count
            switch format {
            case .json:
                if let line {
                    state.buffer.append(contentsOf: line)
                    state.buffer.append(0x0A)
                } else {
                    JSONLineEncoder.append(event, to: &state.buffer)
                }
            case .text, .nmea:
                if case .locations = event {
                    if isHeld {
                        // The batch line is commentary; its fixes are locations like any other.
                        flush(&state)
                        Self.writeToStandardError(commentaryPrefix + TextEventFormatter.line(event) + "\n")
                        guard state.failure == nil else { return true }
                    }
                    for location in locations {
                        if format == .nmea {
                            NMEAEpochEncoder.append(location, to: &state.buffer)
                        } else {
                            state.buffer.append(contentsOf: TextEventFormatter.line(location).utf8)
                            state.buffer.append(0x0A)
                        }
                        if state.buffer.count >= Self.flushThreshold { flush(&state) }
                    }
                } else {
                    // Locations alone on the output (`watch --count 1 > pos.txt` holds one line); the
                    // rest is commentary for the person watching. What is buffered goes first, so that a
                    // terminal showing both shows them in order.
                    flush(&state)
                    Self.writeToStandardError(commentaryPrefix + TextEventFormatter.line(event) + "\n")
                    return state.failure != nil
                }
            case .gpx:
                if locations.isEmpty || isHeld {
                    Self.writeToStandardError(commentaryPrefix + TextEventFormatter.line(event) + "\n")
                }
                guard !locations.isEmpty else { return state.failure != nil }
                do throws(GPXError) {
                    for location in locations {
                        if let gap = log.splitGap, let last = state.lastPointTime, location.timestamp.timeIntervalSince(last) > gap {
                            try state.gpx?.beginSegment()
                        }
                        try state.gpx?.write(location)
                        state.lastPointTime = location.timestamp
                    }
                    if flushEachEvent { try state.gpx?.flush() }
                } catch {
                    state.failure = gpxFailure(error, state.output)
                    Self.restoreLastClose(&state)
                }
                // The closing tags after what reached the file (every event when live, every 64 KiB when
                // as fast as possible), not after what is still buffered.
                if state.keepsDocumentClosed, state.failure == nil, let tags = state.gpx?.closingTags,
                    case let written = lastGPXWrite.value.bytes, written != state.closedAtBytes
                {
                    state.failure = Self.closeProvisionally(&state, tags: tags)
                    state.closedAtBytes = written
                }
                return state.failure != nil
            }
            if flushEachEvent || state.buffer.count >= Self.flushThreshold { flush(&state) }
            return state.failure != nil
        }
        if stoppedNow { stopped.continuation.yield() }
    }

    /// The locations at least `minimum` metres from the last one kept (starting with `last`, which is
    /// updated), in order.
    private static func moved(_ locations: [Location], atLeast minimum: Double, after last: inout Location?) -> [Location] {
        var kept: [Location] = []
        kept.reserveCapacity(locations.count)
        for location in locations {
            if let previous = last, location.distance(from: previous) < minimum { continue }
            kept.append(location)
            last = location
        }
        return kept
    }

    /// How many locations `--min-move` left out.
    package var skippedCount: Int { withState { $0.skipped } }

    /// Writes what is buffered, completes the document, and reports why the output ended early, if it did.
    package func finish() throws(Failure) {
        let failure = withState { state -> Failure? in
            if !state.finished {
                // A rotating log that saw no fix: what waits goes into the file of now.
                if state.waitsForFile, let rotation = log.rotation {
                    if !state.buffer.isEmpty {
                        let (name, index) = rotation.currentFile(at: Date())
                        _ = switchFile(&state, to: name, index: index, rotation: rotation)
                    }
                    if state.waitsForFile {
                        state.finished = true
                        return state.failure
                    }
                }
                state.finished = true
                closeDocument(&state)
            }
            return state.failure
        }
        stopped.continuation.finish()
        reapCompressions(waiting: true)
        if let failure { throw failure }
    }

    private func flush(_ state: inout State) {
        guard !state.buffer.isEmpty, state.failure == nil, !state.waitsForFile else { return }
        state.failure = Self.failureOf(state.output.write(state.buffer), state.output)
        state.buffer.removeAll(keepingCapacity: true)
    }

    private static func failureOf(_ result: OutputFile.WriteResult, _ output: OutputFile) -> Failure? {
        switch result {
        case .written: nil
        case .readerGone: Failure(kind: .readerGone, message: "the reader of \(output.name) went away")
        case .failed(let reason): Failure(kind: .writeFailed, message: "cannot write to \(output.name): \(reason)")
        }
    }

    private func gpxFailure(_ error: GPXError, _ output: OutputFile) -> Failure {
        if error.code == .io, let failure = Self.failureOf(lastGPXWrite.value.result, output) { return failure }
        return Failure(kind: .invalidContent, message: "cannot write GPX: \(error.message)")
    }

    /// Writes to standard error without ever trapping (a closed stderr is not worth a crash).
    package static func writeToStandardError(_ text: String) {
        // Closed by the caller: the descriptor's number now belongs to the runtime (see StandardStreams).
        if StandardStreams.isErrorClosed { return }
        _ = SystemIO.writeAll(STDERR_FILENO, Array(text.utf8))
    }
}
