#if canImport(Glibc)
    import Glibc
#endif

/// The reads and writes of files, pipes and sockets that every module makes, in one place: an interrupted
/// call (`EINTR`) is repeated here and nowhere else, a short write is continued, and a failure is its
/// ``Failure/errno`` with the system's words for it.
package enum SystemIO {
    /// A call that failed: the `errno` it left.
    package struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// The error number.
        package let errno: Int32

        /// Wraps an error number.
        package init(_ errno: Int32) {
            self.errno = errno
        }

        /// The system's words for it, such as `No space left on device`.
        package var reason: String { String(cString: strerror(errno)) }

        /// ``reason``.
        package var description: String { reason }

        /// Whether the call would have blocked (a non-blocking descriptor with nothing to read or no room).
        package var wouldBlock: Bool { errno == EAGAIN || errno == EWOULDBLOCK }
    }

    /// Calls `call` again while it fails with `EINTR`; a negative result is the `errno` it left.
    package static func retrying<Count: BinaryInteger>(_ call: () -> Count) -> Result<Count, Failure> {
        while true {
            let result = call()
            if result >= 0 { return .success(result) }
            let number = Glibc.errno
            if number != EINTR { return .failure(Failure(number)) }
        }
    }

    /// Reads up to `buffer.count` bytes at the descriptor's position: how many (0 at the end of the input).
    package static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Failure> {
        retrying { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    /// Reads up to `buffer.count` bytes at `offset`, leaving the descriptor's position alone.
    package static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Result<Int, Failure> {
        retrying { pread(fd, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// Reads into `bytes` from its start until it is full or the input ends: how many bytes it holds.
    package static func read(_ fd: Int32, into bytes: inout [UInt8], upTo count: Int) -> Result<Int, Failure> {
        bytes.withUnsafeMutableBytes { buffer in
            let limit = min(count, buffer.count)
            var total = 0
            while total < limit {
                switch read(fd, into: UnsafeMutableRawBufferPointer(rebasing: buffer[total..<limit])) {
                case .success(0): return .success(total)
                case .success(let read): total += read
                case .failure(let failure): return .failure(failure)
                }
            }
            return .success(total)
        }
    }

    /// Writes every byte, continuing short writes. A write that takes nothing fails as `ENOSPC`; a
    /// non-blocking descriptor that is full fails as `EAGAIN` (with what it took counted in `written`).
    package static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, written: inout Int) -> Result<Void, Failure> {
        while written < bytes.count {
            switch retrying({ Glibc.write(fd, bytes.baseAddress! + written, bytes.count - written) }) {
            case .success(0): return .failure(Failure(ENOSPC))
            case .success(let count): written += count
            case .failure(let failure): return .failure(failure)
            }
        }
        return .success(())
    }

    /// Writes every byte, continuing short writes (see ``writeAll(_:_:written:)``).
    package static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Result<Void, Failure> {
        var written = 0
        return writeAll(fd, bytes, written: &written)
    }

    /// Writes every byte of `bytes` (see ``writeAll(_:_:written:)``).
    package static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Result<Void, Failure> {
        bytes.withUnsafeBytes { writeAll(fd, $0) }
    }
}
