#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Bytes waiting to be written to a socket, consumed from the front without shifting on every write.
struct OutputBuffer: Sendable {
    /// The result of writing as much as the socket takes.
    enum WriteResult: Equatable {
        /// Everything was written.
        case drained
        /// The socket is full; `progressed` tells whether any byte went out.
        case blocked(progressed: Bool)
        /// The peer is gone or the socket failed.
        case failed(errno: Int32)
    }

    private var storage: [UInt8] = []
    private var head = 0

    /// Bytes still to write.
    var count: Int { storage.count - head }

    /// Whether nothing is waiting.
    var isEmpty: Bool { head == storage.count }

    /// Appends bytes after everything already waiting.
    mutating func append(_ bytes: [UInt8]) {
        storage.append(contentsOf: bytes)
    }

    /// Writes as much as the non-blocking socket `fd` accepts.
    mutating func write(to fd: Int32) -> WriteResult {
        var progressed = false
        while head < storage.count {
            let written = storage.withUnsafeBytes { raw in
                UnixSocket.send(fd, UnsafeRawBufferPointer(rebasing: raw[head...]))
            }
            if written > 0 {
                head += written
                progressed = true
                continue
            }
            let number = errno
            if written < 0 && number == EINTR { continue }
            if written < 0 && (number == EAGAIN || number == EWOULDBLOCK) {
                compact()
                return .blocked(progressed: progressed)
            }
            return .failed(errno: written < 0 ? number : EPIPE)
        }
        // Drop a large burst's capacity once it is sent, so an idle watcher costs little memory.
        storage.removeAll(keepingCapacity: storage.capacity <= 64 * 1024)
        head = 0
        return .drained
    }

    /// Moves the unsent tail to the front once the sent prefix dominates, keeping memory proportional to `count`.
    private mutating func compact() {
        if head >= 64 * 1024 && head * 2 >= storage.count {
            storage.removeSubrange(0..<head)
            head = 0
        }
    }
}
