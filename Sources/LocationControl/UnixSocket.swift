#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

import LocationCore

/// Thin helpers over the C socket API shared by the server and the client.
enum UnixSocket {
    /// The capacity of `sun_path`, including the terminating NUL.
    static let pathCapacity = MemoryLayout.size(ofValue: sockaddr_un().sun_path)

    /// Runs `body` with a `sockaddr_un` for `path`, or throws if the path does not fit.
    static func withAddress<R>(
        _ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R
    ) throws(ControlError) -> R {
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty else {
            throw ControlError(.pathTooLong, "the socket path is empty")
        }
        guard bytes.count < pathCapacity else {
            throw ControlError(
                .pathTooLong,
                "socket path \(path) is \(bytes.count) bytes; a Unix socket path holds at most \(pathCapacity - 1)")
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + 1)
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }

    /// A new `AF_UNIX` stream socket, close-on-exec, optionally non-blocking.
    static func makeStreamSocket(nonBlocking: Bool, path: String) throws(ControlError) -> Int32 {
        #if canImport(Glibc)
        var type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        if nonBlocking { type |= Int32(SOCK_NONBLOCK.rawValue) }
        let fd = socket(AF_UNIX, type, 0)
        #else
        let fd = socket(AF_UNIX, SOCK_STREAM, 0)
        if fd >= 0 {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            if nonBlocking { setNonBlocking(fd) }
        }
        #endif
        guard fd >= 0 else { throw ControlError.system("create a socket for", path: path, errno: errno) }
        return fd
    }

    /// Closes a descriptor (a name types with their own `close()` can call).
    static func closeDescriptor(_ fd: Int32) {
        _ = close(fd)
    }

    /// Sets `O_NONBLOCK` on a descriptor.
    /// The connected peer's process and user (SO_PEERCRED), or `nil` if the system cannot tell.
    static func peerCredentials(_ fd: Int32) -> (pid: pid_t, uid: uid_t)? {
        var credentials = PeerCredentials()
        var length = socklen_t(MemoryLayout<PeerCredentials>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 else { return nil }
        return (credentials.pid, credentials.uid)
    }

    /// The connected peer's user, or `nil`.
    static func peerUID(_ fd: Int32) -> UInt32? { peerCredentials(fd).map { UInt32($0.uid) } }

    static func setNonBlocking(_ fd: Int32) {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
    }

    /// Sends bytes without raising `SIGPIPE` when the peer has gone: how many it took (repeated when
    /// interrupted), or why not.
    static func send(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) -> Result<Int, SystemIO.Failure> {
        SystemIO.retrying {
            #if canImport(Glibc)
            Glibc.send(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
            #else
            Darwin.send(fd, buffer.baseAddress, buffer.count, 0)
            #endif
        }
    }

    /// Receives what has arrived, up to `buffer.count` bytes: how many (0 when the peer finished sending),
    /// repeated when interrupted, or why not.
    static func receive(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) -> Result<Int, SystemIO.Failure> {
        SystemIO.retrying { recv(fd, buffer.baseAddress, buffer.count, 0) }
    }

    /// Milliseconds for `poll(2)`, rounded up so a deadline is never missed by a hair; `-1` for none.
    static func pollTimeout(_ duration: Duration?) -> Int32 {
        guard let duration else { return -1 }
        if duration <= .zero { return 0 }
        let (seconds, attoseconds) = duration.components
        let millis = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: millis)
    }
}

/// Linux's `struct ucred` (pid, uid, gid), which Glibc's module does not export without _GNU_SOURCE.
private struct PeerCredentials {
    var pid: pid_t = 0
    var uid: uid_t = 0
    var gid: gid_t = 0
}
