import Foundation
import LocationCore

#if canImport(Glibc)
    import Glibc
#endif

/// Where a command's output goes: standard output, or a path opened as it is.
///
/// A path is opened itself, never replaced: an existing file keeps its mode, owner and hard links, a
/// symbolic link is followed, and a FIFO or a device is written to. A new file is created with mode 0600
/// (less whatever the umask takes away), because a location history is personal data.
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

    /// Standard output.
    init() {
        descriptor = STDOUT_FILENO
        name = "standard output"
        owned = false
        continuesDocument = false
    }

    /// The longest tail read to find a GPX document's `</gpx>`: what may follow it is whitespace.
    static let tailLength = 64 * 1024

    /// Opens `path` to add to what it holds, creating it (0600) if it does not exist, and locks it, so that
    /// two loggers never write one file.
    ///
    /// - Throws: ``LocationError`` with `.invalidData` when the file cannot be opened, ``LocationError/Code/outputBusy``
    ///   when another process holds its lock, ``LocationError/Code/outputNotContinuable`` when a GPX
    ///   file does not end with `</gpx>`, and `.invalidConfiguration` for a GPX continuation of a file
    ///   that is not a regular file (a FIFO has nothing to continue).
    init(path: String, existing: Existing) throws(LocationError) {
        guard existing != .truncate else {
            try self.init(path: path)
            return
        }
        let flags = existing == .append ? O_WRONLY | O_APPEND : O_RDWR
        let fd = open(path, flags | O_CREAT | O_CLOEXEC | O_NOCTTY, 0o600)
        guard fd >= 0 else {
            throw LocationError(.invalidData, "cannot open output file \(path): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(fd)
            throw LocationError(.invalidData, "cannot inspect output file \(path): \(reason)")
        }
        let isRegular = info.st_mode & S_IFMT == S_IFREG
        if isRegular, flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let reason = errno == EWOULDBLOCK ? "another program is writing it (it holds the file's lock)" : String(cString: strerror(errno))
            Glibc.close(fd)
            throw LocationError(.outputBusy, "cannot append to \(path): \(reason)")
        }
        var continues = false
        if existing == .continueGPX {
            guard isRegular else {
                Glibc.close(fd)
                throw LocationError(.invalidConfiguration, "cannot append GPX to \(path): it is not a regular file (a GPX document can be continued only in a file)")
            }
            if info.st_size > 0 {
                guard let offset = Self.closingTagOffset(fd, size: Int(info.st_size)) else {
                    Glibc.close(fd)
                    throw LocationError(
                        .outputNotContinuable,
                        "cannot append to \(path): it does not end with </gpx> (not GPX, cut short, or still being written by another program); --append adds tracks to a complete GPX document only")
                }
                guard lseek(fd, off_t(offset), SEEK_SET) >= 0 else {
                    let reason = String(cString: strerror(errno))
                    Glibc.close(fd)
                    throw LocationError(.invalidData, "cannot append to \(path): \(reason)")
                }
                continues = true
            }
        }
        self.init(descriptor: fd, name: path, continuesDocument: continues)
    }

    private init(descriptor: Int32, name: String, continuesDocument: Bool) {
        self.descriptor = descriptor
        self.name = name
        owned = true
        self.continuesDocument = continuesDocument
    }

    /// Where the last `</gpx>` of a file begins, when only whitespace follows it.
    private static func closingTagOffset(_ fd: Int32, size: Int) -> Int? {
        let length = min(size, tailLength)
        var tail = [UInt8](repeating: 0, count: length)
        let read = tail.withUnsafeMutableBytes { pread(fd, $0.baseAddress, length, off_t(size - length)) }
        guard read == length else { return nil }
        var end = tail.count
        while end > 0, [0x20, 0x09, 0x0A, 0x0D].contains(tail[end - 1]) { end -= 1 }
        let closing = Array("</gpx>".utf8)
        guard end >= closing.count, Array(tail[(end - closing.count)..<end]) == closing else { return nil }
        return size - length + end - closing.count
    }

    /// Opens `path` for writing, creating it (0600) if it does not exist.
    ///
    /// - Throws: ``LocationError`` naming the path and the system's reason (a directory, a read-only
    ///   place, permission).
    init(path: String) throws(LocationError) {
        // O_TRUNC truncates a regular file only; a FIFO or a device is written to as it is.
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0o600)
        guard fd >= 0 else {
            throw LocationError(.invalidData, "cannot create output file \(path): \(String(cString: strerror(errno)))")
        }
        descriptor = fd
        name = path
        owned = true
        continuesDocument = false
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
