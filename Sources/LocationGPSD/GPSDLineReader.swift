#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Splits what gpsd sends into lines, in a fixed buffer: memory stays the same whatever the peer sends.
///
/// libgps's own reader gives up on a line longer than its 8 KB buffer and reports it exactly like an
/// orderly close, and cannot skip a bad line. This reader keeps lines of up to ``capacity`` bytes; a
/// longer one is reported once (``Next/tooLong``) as soon as the buffer is full, and its bytes are
/// dropped up to the next newline, after which reading goes on normally.
///
/// It belongs to one session and is used only on that session's thread.
final class GPSDLineReader {
    /// What ``next(from:)`` found.
    enum Next {
        /// One complete line, NUL-terminated in place of its newline; valid until the next call.
        case line(UnsafeMutablePointer<UInt8>, count: Int)
        /// A line outgrew the buffer; it is being skipped up to its newline. `start` is its first bytes.
        case tooLong(start: [UInt8])
        /// No complete line yet: wait until the socket is readable.
        case needMore
        /// The peer closed the connection; `midLine` when it left an unfinished line behind.
        case closed(midLine: Bool)
        /// Reading failed with this errno.
        case failed(Int32)
    }

    /// The longest line kept, newline included: far above the longest message gpsd writes (about 10 KB).
    static let capacity = 65_536
    /// How much of an overlong line is kept to quote it in the error message.
    static let quotedPrefix = 60

    private let buffer: UnsafeMutablePointer<UInt8>
    /// Unread bytes are `start..<end`; no newline lies in `start..<scanned`.
    private var start = 0
    private var end = 0
    private var scanned = 0
    /// Inside a line that was too long: drop bytes up to the next newline.
    private var discarding = false

    init() {
        buffer = .allocate(capacity: Self.capacity)
    }

    deinit {
        buffer.deallocate()
    }

    /// Whether a complete line is already buffered, so reading needs no wait for the socket.
    var hasLine: Bool {
        scanned < end && memchr(buffer + scanned, 0x0A, end - scanned) != nil
    }

    /// The next line from the buffer, reading the socket (non-blocking, at most once) when none is buffered.
    func next(from socket: Int32) -> Next {
        if let line = takeLine() { return line }
        if start > 0 {
            // Move the unfinished line to the front, so the whole buffer is free for it.
            if end > start { memmove(buffer, buffer + start, end - start) }
            end -= start
            scanned -= start
            start = 0
        }
        if end == Self.capacity {
            let lineStart = Array(UnsafeBufferPointer(start: buffer, count: Self.quotedPrefix))
            discarding = true
            start = 0
            end = 0
            scanned = 0
            return .tooLong(start: lineStart)
        }
        let received = recv(socket, buffer + end, Self.capacity - end, Int32(MSG_DONTWAIT))
        if received == 0 { return .closed(midLine: discarding || end > start) }
        if received < 0 {
            let code = errno
            if code == EAGAIN || code == EWOULDBLOCK || code == EINTR { return .needMore }
            return .failed(code)
        }
        end += received
        return takeLine() ?? .needMore
    }

    /// Cuts the next complete line out of the buffer, skipping the rest of an overlong one first.
    private func takeLine() -> Next? {
        while scanned < end {
            guard let newline = memchr(buffer + scanned, 0x0A, end - scanned) else {
                scanned = end
                break
            }
            let index = buffer.distance(to: newline.assumingMemoryBound(to: UInt8.self))
            if discarding {
                discarding = false
                start = index + 1
                scanned = start
                continue
            }
            let lineStart = start
            buffer[index] = 0
            start = index + 1
            scanned = start
            return .line(buffer + lineStart, count: index - lineStart)
        }
        if discarding {
            start = 0
            end = 0
            scanned = 0
        }
        return nil
    }
}
