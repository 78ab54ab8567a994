import Foundation
import LocationCore

#if canImport(Glibc)
    import Glibc
#endif

/// Where a command's output goes: standard output, or a path opened as it is.
///
/// A path is opened itself, never replaced: an existing file keeps its mode, owner and hard links, a
/// symbolic link is followed, and a FIFO or a device is written to. A new file is created with mode 0600
/// (less whatever the umask takes away), because a location history is personal data. A regular file is
/// locked (`flock`) while it is written, so a second writer is refused instead of mixing its output in.
package struct OutputFile: Sendable {
    /// How a write ended.
    package enum WriteResult: Equatable {
        /// Everything was written.
        case written
        /// The reader went away (EPIPE): a closed pipe, as `| head -3` leaves.
        case readerGone
        /// The write failed; the system's reason, such as "No space left on device".
        case failed(String)
    }

    /// What happens to what an existing file holds.
    package enum Existing: Sendable, Equatable {
        /// It is cut: the output starts the file anew.
        case truncate
        /// Every write goes after it (JSON lines, text, NMEA).
        case append
        /// It is a GPX document whose `</gpx>` the output overwrites, continuing it with new tracks; an
        /// empty file starts a new document.
        case continueGPX
    }

    /// The descriptor (1 for standard output).
    let descriptor: Int32
    /// The path as given, or "standard output", for messages.
    let name: String
    private let owned: Bool
    /// With ``Existing/continueGPX``: whether the file held a document, which the output continues (else
    /// it writes a new one).
    let continuesDocument: Bool
    /// With ``Existing/continueGPX``: how many bytes of a point cut short were dropped after the file's
    /// last whole point (see `GPXContinuation`), when it was cut.
    let repairedCut: Int?
    /// With ``Existing/continueGPX``: whether the document's root declares the location extension's
    /// namespace (else the tracks added declare it).
    let declaresExtensions: Bool

    /// Standard output.
    init() {
        descriptor = STDOUT_FILENO
        name = "standard output"
        owned = false
        continuesDocument = false
        repairedCut = nil
        declaresExtensions = true
    }

    /// Opens `path` for writing, creating it (0600) if it does not exist, and locks a regular file, so that
    /// two loggers never write one file; `existing` says what becomes of what the file holds. With
    /// `regularFileOnly` (a rotating log) anything but a regular file is refused, and a FIFO without a
    /// reader is not waited for.
    ///
    /// - Throws: ``LocationError`` with `.invalidData` when the file cannot be opened, ``LocationError/Code/outputBusy``
    ///   when another process holds its lock, ``LocationError/Code/outputNotContinuable`` when a GPX
    ///   file is not a document that can be continued, and `.invalidConfiguration` for a GPX continuation
    ///   (or a rotating log) of a file that is not a regular file.
    init(path: String, existing: Existing, regularFileOnly: Bool = false) throws(LocationError) {
        let verb = existing == .truncate ? "create output file" : "append to"
        var flags = existing == .continueGPX ? O_RDWR : O_WRONLY
        // O_TRUNC would cut a file another logger holds locked: it is cut after the lock is taken.
        if existing == .append { flags |= O_APPEND }
        if regularFileOnly { flags |= O_NONBLOCK }
        let fd = open(path, flags | O_CREAT | O_CLOEXEC | O_NOCTTY, 0o600)
        guard fd >= 0 else {
            if regularFileOnly, errno == ENXIO {
                throw LocationError(.invalidConfiguration, "cannot write log file \(path): it is not a regular file (a FIFO; a rotating log writes files only)")
            }
            throw LocationError(.invalidData, "cannot \(verb) \(path): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(fd)
            throw LocationError(.invalidData, "cannot inspect output file \(path): \(reason)")
        }
        let isRegular = info.st_mode & S_IFMT == S_IFREG
        if regularFileOnly {
            guard isRegular else {
                Glibc.close(fd)
                throw LocationError(.invalidConfiguration, "cannot write log file \(path): it is not a regular file (a rotating log writes files only)")
            }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        }
        if isRegular, flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let reason = errno == EWOULDBLOCK ? "another program is writing it (it holds the file's lock)" : String(cString: strerror(errno))
            Glibc.close(fd)
            throw LocationError(.outputBusy, "cannot \(verb) \(path): \(reason)")
        }
        var continues = false
        var declares = true
        var repair: (offset: Int, cut: Int)?
        switch existing {
        case .truncate:
            if isRegular, info.st_size > 0, ftruncate(fd, 0) != 0 {
                let reason = String(cString: strerror(errno))
                Glibc.close(fd)
                throw LocationError(.invalidData, "cannot \(verb) \(path): \(reason)")
            }
        case .append:
            // A line cut short (a full disk, a kill in the middle of a write) is ended, so that the next
            // record starts a line of its own instead of being glued to the broken one.
            // The descriptor is write-only (read-write, a FIFO would never see its reader go): the last byte
            // is read through a second one of the same file.
            if isRegular, info.st_size > 0 {
                let reader = open("/proc/self/fd/\(fd)", O_RDONLY | O_CLOEXEC)
                var last: UInt8 = 0x0A
                if reader >= 0 {
                    _ = pread(reader, &last, 1, off_t(info.st_size - 1))
                    Glibc.close(reader)
                }
                if last != 0x0A { _ = SystemIO.writeAll(fd, [0x0A]) }
            }
        case .continueGPX:
            guard isRegular else {
                Glibc.close(fd)
                throw LocationError(.invalidConfiguration, "cannot append GPX to \(path): it is not a regular file (a GPX document can be continued only in a file)")
            }
            if info.st_size > 0 {
                let offset: Int
                switch GPXContinuation.find(in: fd, size: Int(info.st_size)) {
                case .closingTag(let at)?:
                    offset = at
                case .afterLastPoint(let end, let cut)?:
                    offset = end
                    repair = (end, cut)
                case nil:
                    Glibc.close(fd)
                    throw LocationError(
                        .outputNotContinuable,
                        "cannot append to \(path): it does not end with </gpx> (not GPX, or cut short outside a track point); --append adds tracks to a complete GPX document only")
                }
                declares = GPXContinuation.rootDeclaresExtensions(in: fd, size: Int(info.st_size))
                var failure: String?
                if lseek(fd, off_t(offset), SEEK_SET) < 0 || ftruncate(fd, off_t(offset)) != 0 {
                    failure = String(cString: strerror(errno))
                } else if repair != nil, case .failure(let error) = SystemIO.writeAll(fd, GPXContinuation.closingAfterLastPoint) {
                    failure = error.reason
                }
                if let failure {
                    Glibc.close(fd)
                    throw LocationError(.invalidData, "cannot append to \(path): \(failure)")
                }
                continues = true
            }
        }
        descriptor = fd
        name = path
        owned = true
        continuesDocument = continues
        repairedCut = repair?.cut
        declaresExtensions = declares
    }

    /// Opens `path` for writing, creating it (0600) if it does not exist, cutting what it holds.
    ///
    /// - Throws: ``LocationError`` naming the path and the system's reason (a directory, a read-only
    ///   place, permission), or ``LocationError/Code/outputBusy`` when another program holds its lock.
    init(path: String) throws(LocationError) {
        try self.init(path: path, existing: .truncate)
    }

    /// Writes all of `bytes`, retrying after interruptions.
    func write(_ bytes: [UInt8]) -> WriteResult {
        Self.write(bytes, to: descriptor)
    }

    /// Writes all of `bytes` to an open descriptor, retrying after interruptions; a reader that went away
    /// (EPIPE) is told apart from a failed write.
    package static func write(_ bytes: [UInt8], to descriptor: Int32) -> WriteResult {
        // Closed by the caller (`>&-`): descriptor 1 is the runtime's now, never ours to write.
        if descriptor == STDOUT_FILENO, StandardStreams.isOutputClosed { return .failed("it is closed") }
        switch SystemIO.writeAll(descriptor, bytes) {
        case .success: return .written
        case .failure(let failure) where failure.errno == EPIPE: return .readerGone
        case .failure(let failure): return .failed(failure.reason)
        }
    }

    /// Whether the output is a regular file (it can be rewound and cut).
    var isRegularFile: Bool {
        var info = stat()
        return fstat(descriptor, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
    }

    /// Writes `bytes` and moves the file offset back to where they start, so that the next write replaces
    /// them (a regular file only).
    func writeProvisionally(_ bytes: [UInt8]) -> WriteResult {
        let start = lseek(descriptor, 0, SEEK_CUR)
        guard start >= 0 else { return .failed(String(cString: strerror(errno))) }
        let result = write(bytes)
        guard result == .written else { return result }
        return lseek(descriptor, start, SEEK_SET) >= 0 ? .written : .failed(String(cString: strerror(errno)))
    }

    /// Cuts a regular file at `offset` and writes `tags` there, leaving the offset where they begin (after a
    /// failed write: the last whole document again).
    func restore(closing tags: [UInt8], at offset: Int) -> WriteResult {
        guard ftruncate(descriptor, off_t(offset)) == 0, lseek(descriptor, off_t(offset), SEEK_SET) >= 0 else {
            return .failed(String(cString: strerror(errno)))
        }
        return writeProvisionally(tags)
    }

    /// Cuts a regular file at the current offset (dropping provisional bytes beyond it).
    func truncateAtOffset() -> WriteResult {
        let offset = lseek(descriptor, 0, SEEK_CUR)
        guard offset >= 0, ftruncate(descriptor, offset) == 0 else { return .failed(String(cString: strerror(errno))) }
        return .written
    }

    /// Closes a file opened by path (standard output stays open).
    func close() -> WriteResult {
        guard owned else { return .written }
        return Glibc.close(descriptor) == 0 ? .written : .failed(String(cString: strerror(errno)))
    }
}

extension LocationError.Code {
    /// An output file another program holds the lock of (another logger writing it).
    package static let outputBusy: LocationError.Code = "output-busy"
    /// A file `--append` cannot continue: a GPX output that does not end with `</gpx>`.
    package static let outputNotContinuable: LocationError.Code = "output-not-continuable"
}
