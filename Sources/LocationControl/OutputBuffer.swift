#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

import LocationCore

/// Bytes waiting to be written to a socket, consumed from the front without shifting on every write.
///
/// The bytes are kept as the arrays they were appended as (small ones gathered into one), so that a large
/// unit queued to many connections (a held batch) is stored once and shared, not copied per connection.
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

    /// Appended bytes below this size are copied into the last chunk rather than kept as a chunk of their own.
    private static let gatherLimit = 64 * 1024

    private var chunks: [[UInt8]] = []
    /// The first chunk not yet written in full.
    private var first = 0
    /// Bytes of `chunks[first]` already written.
    private var head = 0
    /// Whether the last chunk may take more bytes (it is one this buffer gathered, not a shared unit).
    private var lastIsGathered = false

    /// Bytes still to write.
    private(set) var count = 0

    /// Whether nothing is waiting.
    var isEmpty: Bool { count == 0 }

    /// Appends bytes after everything already waiting.
    mutating func append(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        count += bytes.count
        if bytes.count < Self.gatherLimit, lastIsGathered, chunks[chunks.count - 1].count < Self.gatherLimit {
            chunks[chunks.count - 1].append(contentsOf: bytes)
            return
        }
        // Kept as it is: a large unit stays shared with every other buffer it was queued to.
        chunks.append(bytes)
        lastIsGathered = bytes.count < Self.gatherLimit
    }

    /// Writes as much as the non-blocking socket `fd` accepts.
    mutating func write(to fd: Int32) -> WriteResult {
        var progressed = false
        while first < chunks.count {
            let sent = chunks[first].withUnsafeBytes { raw in
                UnixSocket.send(fd, UnsafeRawBufferPointer(rebasing: raw[head...]))
            }
            let written: Int
            switch sent {
            case .success(let count) where count > 0: written = count
            case .success: return .failed(errno: EPIPE)
            case .failure(let failure) where failure.wouldBlock:
                compact()
                return .blocked(progressed: progressed)
            case .failure(let failure): return .failed(errno: failure.errno)
            }
            head += written
            count -= written
            progressed = true
            if head == chunks[first].count {
                // Let go of a written chunk at once: a shared unit is freed when its last reader is done.
                chunks[first] = []
                first += 1
                head = 0
            }
        }
        chunks.removeAll(keepingCapacity: chunks.capacity <= 64)
        first = 0
        head = 0
        lastIsGathered = false
        return .drained
    }

    /// Drops the written chunks from the front once they dominate, keeping the array proportional to what waits.
    private mutating func compact() {
        if first >= 64 && first * 2 >= chunks.count {
            chunks.removeSubrange(0..<first)
            first = 0
        }
    }
}
