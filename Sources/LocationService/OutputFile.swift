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

    /// The descriptor (1 for standard output).
    let descriptor: Int32
    /// The path as given, or "standard output", for messages.
    let name: String
    private let owned: Bool

    /// Standard output.
    init() {
        descriptor = STDOUT_FILENO
        name = "standard output"
        owned = false
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
