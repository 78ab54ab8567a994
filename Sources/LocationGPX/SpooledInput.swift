#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Foundation
import LocationCore

/// A replay's input that can be read only once (standard input, a FIFO, a shell's `<(…)`), copied once into
/// an unlinked temporary file so that it can be read as often as a replay needs (choosing the points to
/// play, then playing them, then again for each loop), in constant memory.
///
/// A regular file is read where it is; nothing is copied.
final class SpooledInput: Sendable {
    private let descriptor = Locked<Int32?>(nil)

    deinit {
        if let fd = descriptor.value { close(fd) }
    }

    /// A path that reads the input from its start each time it is opened: `path` itself for a regular
    /// file, else a path to the copy (made on the first call).
    ///
    /// - Throws: ``GPXError/Code/io`` naming `path` when it cannot be read, or the copy cannot be written
    ///   (a full temporary directory names it).
    func readablePath(for path: String) throws(GPXError) -> String {
        var info = stat()
        if stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG { return path }
        let result: Result<Int32, GPXError> = descriptor.withLock { descriptor in
            if let fd = descriptor { return .success(fd) }
            let copied = Result { () throws(GPXError) in try Self.copy(path) }
            if case .success(let fd) = copied { descriptor = fd }
            return copied
        }
        return "/proc/self/fd/\(try result.get())"
    }

    private static func copy(_ path: String) throws(GPXError) -> Int32 {
        func failure(_ what: String, _ reason: String = String(cString: strerror(errno))) -> GPXError {
            GPXError(.io, file: path, line: nil, column: nil, "\(what): \(reason)")
        }
        let input = open(path, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw failure("cannot open the input") }
        defer { close(input) }
        let directory = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(directory)/location-replay-XXXXXX".utf8CString)
        let copy = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard copy >= 0 else { throw failure("cannot keep a copy of the input in \(directory)") }
        // Unlinked at once: nothing is left behind, whatever ends the process.
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count: Int
            switch buffer.withUnsafeMutableBytes({ SystemIO.read(input, into: $0) }) {
            case .success(let read): count = read
            case .failure(let problem):
                close(copy)
                throw failure("cannot read the input", problem.reason)
            }
            if count == 0 { break }
            if case .failure(let problem) = buffer.withUnsafeBytes({ SystemIO.writeAll(copy, UnsafeRawBufferPointer(rebasing: $0[0..<count])) }) {
                close(copy)
                throw failure("cannot keep a copy of the input in \(directory)", problem.reason)
            }
        }
        return copy
    }
}
