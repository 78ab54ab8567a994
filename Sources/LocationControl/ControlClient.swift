import Foundation
import LocationCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A connection to the daemon's control socket: send requests, read replies, or watch events.
///
/// The client blocks the calling thread (with timeouts) instead of using Swift concurrency, so a one-shot
/// command pays only for a connect, a write and a read:
///
/// ```swift
/// let reply = try ControlClient.request(.state(set: nil), path: socketPath)
/// let state = try reply.decode(String.self, forKey: "state")
/// ```
///
/// For `watch`, ``watch(timeout:)`` returns the event lines as an `AsyncThrowingStream` read on a thread of its own.
public final class ControlClient: Sendable {
    /// The socket path connected to.
    public let path: String
    /// The connected socket; closed in deinit only, so it is never reused while another thread reads it.
    private let fd: Int32
    /// Bytes received; those before `head` were already returned as lines (consumed without shifting), and
    /// those before `scanned` hold no line break (a long line is searched once, not again for every read).
    private let received = Locked<(bytes: [UInt8], head: Int, scanned: Int)>(([], 0, 0))

    /// How long connecting and sending may block before failing with `timeout`.
    public static let sendTimeout: Duration = .seconds(5)

    /// The longest reply line accepted, in bytes.
    public static let maxReplyLength = 16 * 1024 * 1024

    /// The longest event line a watch accepts, in bytes: a held batch is one line, about 250 bytes a fix, and
    /// an app may hold up to `batch.capacity` fixes (100,000 by default, about 25 MB).
    public static let maxEventLength = Int.max

    /// Connects to the daemon's socket.
    ///
    /// - Throws: ``ControlError`` naming the path: `not-listening` if there is no socket file or nothing
    ///   listens on it, `permission-denied` if this user may not connect, `path-too-long`, or `io`.
    public init(path: String) throws(ControlError) {
        self.path = path
        let fd = try UnixSocket.makeStreamSocket(nonBlocking: false, path: path)
        // Bounds a connect to a daemon whose backlog is full, and a send to one that stopped reading.
        var limit = timeval(tv_sec: Int(Self.sendTimeout.components.seconds), tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        let result = try UnixSocket.withAddress(path) { address, length in connect(fd, address, length) }
        guard result == 0 else {
            let number = errno
            UnixSocket.closeDescriptor(fd)
            throw Self.connectError(path: path, errno: number)
        }
        do throws(ControlError) { try Self.checkPeer(fd, path: path) } catch {
            UnixSocket.closeDescriptor(fd)
            throw error
        }
        self.fd = fd
    }

    /// Checks who answers (SO_PEERCRED): this client's own user, root, or the owner of the socket's
    /// directory (the user locationd runs as, who made it). Anyone else may have put their own socket where
    /// locationd's was, so nothing is sent to them.
    private static func checkPeer(_ fd: Int32, path: String) throws(ControlError) {
        guard let credentials = UnixSocket.peerCredentials(fd) else {
            throw ControlError.system("identify the process answering on", path: path, errno: errno)
        }
        let parent = FilePathText.parent(of: path)
        var directory = stat()
        let directoryOwner: uid_t? = stat(parent, &directory) == 0 ? directory.st_uid : nil
        let peer = credentials.uid
        guard peer == 0 || peer == getuid() || peer == directoryOwner else {
            let name = getpwuid(peer).flatMap { $0.pointee.pw_name.map { String(cString: $0) } } ?? "?"
            throw ControlError(
                .untrustedPeer,
                "the process answering on \(path) (pid \(credentials.pid)) runs as \(name) (uid \(peer)), who is neither you, "
                    + "root, nor the owner of \(parent); not talking to it (another user may have replaced locationd's socket)")
        }
    }

    deinit {
        UnixSocket.closeDescriptor(fd)
    }

    /// Connects, sends one request, reads its reply, and disconnects.
    ///
    /// - Parameters:
    ///   - request: The request to send.
    ///   - path: The control socket.
    ///   - timeout: How long to wait for the reply; `nil` picks ``defaultTimeout(for:)``.
    /// - Throws: A connect error, `timeout`, `connection-closed`, `protocol-error`, or the daemon's own error.
    public static func request(
        _ request: ControlRequest, path: String, timeout: Duration? = nil
    ) throws(ControlError) -> ControlResponse {
        try ControlClient(path: path).request(request, timeout: timeout)
    }

    /// A reply timeout that outlasts the daemon's own: a `current` timeout plus 5 s, else 10 s.
    public static func defaultTimeout(for request: ControlRequest) -> Duration {
        if case .current(let timeout?, _, _) = request { return timeout + .seconds(5) }
        return .seconds(10)
    }

    /// Sends one request and reads its reply.
    ///
    /// - Parameters:
    ///   - request: The request to send.
    ///   - timeout: How long to wait for the reply; `nil` picks ``defaultTimeout(for:)``.
    /// - Throws: `timeout`, `connection-closed`, `protocol-error`, or the error the daemon replied with.
    public func request(_ request: ControlRequest, timeout: Duration? = nil) throws(ControlError) -> ControlResponse {
        try send(request)
        let line = try readLine(timeout: timeout ?? Self.defaultTimeout(for: request))
        return try ControlResponse(line: line)
    }

    /// Sends `watch` and, once the daemon has accepted it, returns its event lines.
    ///
    /// Each element is one event line without its `\n`, e.g. `{"type":"location",...}`, including
    /// `{"type":"error","code":"watcher-lagged",...}` when events were missed. The stream ends with
    /// `connection-closed` when the daemon closes the connection; ending the iteration closes the connection.
    public func watch(timeout: Duration = .seconds(10)) throws(ControlError) -> AsyncThrowingStream<[UInt8], any Error> {
        _ = try request(.watch, timeout: timeout)
        // Bounded: a consumer that stops taking lines (its own output blocked) costs at most this many lines
        // of memory; what it misses is counted and reported in the stream once it takes lines again.
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: [UInt8].self, throwing: (any Error).self, bufferingPolicy: .bufferingOldest(Self.watchBufferLines))
        continuation.onTermination = { [self] _ in
            // Wakes the reading thread; the descriptor itself is closed in deinit, after that thread has let go.
            shutdown(fd, Int32(SHUT_RDWR))
        }
        let thread = Thread { [self] in
            var relay = WatchRelay()
            while true {
                do {
                    let line = try readLine(timeout: nil, limit: Self.maxEventLength)
                    if !relay.offer(line, to: continuation) { return }
                } catch {
                    relay.finish(throwing: error, continuation)
                    return
                }
            }
        }
        thread.name = "control-watch"
        thread.start()
        return stream
    }

    /// The most event lines ``watch(timeout:)`` holds for a consumer that does not take them: room for a
    /// whole held batch at the default capacity (100,000 fixes, about 30 MB), so that a consumer that
    /// decodes and writes more slowly than the socket delivers still gets a batch whole.
    public static let watchBufferLines = 131_072

    /// Sends one request line.
    public func send(_ request: ControlRequest) throws(ControlError) {
        try send(rawLine: request.jsonLine)
    }

    /// Sends bytes as they are, e.g. a request line relayed from another tool; end each line with `\n`.
    public func send(rawLine bytes: [UInt8]) throws(ControlError) {
        var offset = 0
        while offset < bytes.count {
            let failure: SystemIO.Failure
            switch bytes.withUnsafeBytes({ UnixSocket.send(fd, UnsafeRawBufferPointer(rebasing: $0[offset...])) }) {
            case .success(let count) where count > 0:
                offset += count
                continue
            case .success: failure = SystemIO.Failure(EPIPE)
            case .failure(let error): failure = error
            }
            if failure.wouldBlock {
                throw ControlError(.timeout, "locationd on \(path) did not take the request within \(Self.sendTimeout)")
            }
            throw ControlError(
                failure.errno == EPIPE || failure.errno == ECONNRESET ? .connectionClosed : .io,
                "cannot send to locationd on \(path): \(failure.reason)")
        }
    }

    /// Reads the next line the daemon sends, without its `\n`.
    ///
    /// - Parameters:
    ///   - timeout: How long to wait; `nil` waits for ever.
    ///   - limit: The longest line accepted, in bytes.
    /// - Throws: `timeout`, `connection-closed` (also for a partial last line), `protocol-error` for a line over
    ///   `limit`, or `io`.
    public func readLine(timeout: Duration?, limit: Int = maxReplyLength) throws(ControlError) -> [UInt8] {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        // Made only when a read is needed: a line already received costs no allocation.
        var chunk: [UInt8] = []
        while true {
            let (line, unconsumed): ([UInt8]?, Int) = received.withLock { buffer in
                let start = buffer.head
                guard let newline = buffer.bytes[max(start, buffer.scanned)...].firstIndex(of: UInt8(ascii: "\n")) else {
                    // Only a partial line is left: move it to the front before reading more.
                    buffer.bytes.removeSubrange(0..<start)
                    buffer.head = 0
                    buffer.scanned = buffer.bytes.count
                    return (nil, buffer.bytes.count)
                }
                buffer.head = newline + 1
                return (Array(buffer.bytes[start..<newline]), 0)
            }
            if let line { return line }
            guard unconsumed <= limit else {
                throw ControlError(.protocolError, "a line from locationd on \(path) exceeds \(limit) bytes")
            }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let wait = deadline.map { $0 - .now }
            if let wait, wait <= .zero {
                throw ControlError(.timeout, "locationd on \(path) did not answer within \(timeout!)")
            }
            let ready = poll(&descriptor, 1, UnixSocket.pollTimeout(wait))
            if ready < 0 {
                if errno == EINTR { continue }
                throw ControlError(.io, "cannot wait for locationd on \(path): \(String(cString: strerror(errno)))")
            }
            if ready == 0 { continue }
            // A long line (a held batch) is read in larger pieces.
            let size = unconsumed > 1 << 20 ? 1 << 20 : 64 * 1024
            if chunk.count < size { chunk = [UInt8](repeating: 0, count: size) }
            switch chunk.withUnsafeMutableBytes({ UnixSocket.receive(fd, $0) }) {
            case .success(0):
                throw ControlError(.connectionClosed, "locationd closed the connection on \(path)")
            case .success(let count):
                received.withLock { $0.bytes.append(contentsOf: chunk[0..<count]) }
            case .failure(let failure) where failure.wouldBlock:
                continue
            case .failure(let failure):
                throw ControlError(
                    failure.errno == ECONNRESET ? .connectionClosed : .io,
                    "cannot read from locationd on \(path): \(failure.reason)")
            }
        }
    }

    /// Shuts the connection down in both directions; reads in progress end with `connection-closed`.
    public func close() {
        shutdown(fd, Int32(SHUT_RDWR))
    }

    /// A connect failure explained for a person.
    private static func connectError(path: String, errno number: Int32) -> ControlError {
        let reason = String(cString: strerror(number))
        switch number {
        case ENOENT:
            return ControlError(.notListening, "no locationd socket at \(path) (is locationd running?)")
        case ECONNREFUSED:
            var info = stat()
            if lstat(path, &info) == 0, info.st_mode & S_IFMT != S_IFSOCK {
                let kind = info.st_mode & S_IFMT == S_IFDIR ? "a directory" : info.st_mode & S_IFMT == S_IFREG ? "a regular file" : "not a socket"
                return ControlError(.notListening, "\(path) is \(kind), not locationd's socket")
            }
            return ControlError(.notListening, "nothing is listening on \(path) (a stale socket file; is locationd running?)")
        case EACCES, EPERM:
            return ControlError(.permissionDenied, "permission denied connecting to \(path): \(reason)")
        case EAGAIN, EWOULDBLOCK:
            return ControlError(.timeout, "locationd on \(path) did not accept the connection within \(sendTimeout)")
        case ENOTDIR:
            return ControlError(.notListening, "no locationd socket at \(path): \(reason)")
        default:
            return ControlError.system("connect to", path: path, errno: number)
        }
    }
}
