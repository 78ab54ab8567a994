import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// TCP on 127.0.0.1, for servers and peers started by tests and benchmarks: free ports, listening sockets,
/// and whether something accepts connections.
public enum LoopbackTCP {
    /// The IPv4 loopback address with `port`.
    public static func address(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
        return address
    }

    /// A loopback port nobody listened on a moment ago (bound to port 0, read back, released).
    public static func freePort() throws(TestSupportError) -> Int {
        let fd = try newSocket()
        defer { close(fd) }
        guard let port = bind(fd, port: 0) else {
            throw .socketFailed(operation: "bind a free port on 127.0.0.1", errno: errno)
        }
        return port
    }

    /// A socket bound to a free loopback port but not listening, which the caller closes: connecting to the
    /// port is refused, and no other process can take it while the socket is open. `listen(2)` on it
    /// later makes it a server on the same port.
    public static func reservedPort() throws(TestSupportError) -> (fd: Int32, port: Int) {
        let fd = try newSocket()
        guard let port = bind(fd, port: 0) else {
            let error = errno
            close(fd)
            throw .socketFailed(operation: "bind a free port on 127.0.0.1", errno: error)
        }
        return (fd, port)
    }

    /// A socket listening on 127.0.0.1:`port` (0 picks a free port), with `SO_REUSEADDR` so a server can be
    /// started again on the port of one just stopped; returns the socket, which the caller closes, and
    /// the port it listens on.
    public static func listen(port: Int = 0, backlog: Int32 = 16) throws(TestSupportError) -> (fd: Int32, port: Int) {
        let fd = try newSocket()
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        guard let bound = bind(fd, port: port), Glibc.listen(fd, backlog) == 0 else {
            let error = errno
            close(fd)
            throw .socketFailed(operation: "listen on 127.0.0.1:\(port)", errno: error)
        }
        return (fd, bound)
    }

    /// A socket connected to 127.0.0.1:`port`, which the caller closes.
    public static func connect(port: Int) throws(TestSupportError) -> Int32 {
        let fd = try newSocket()
        guard connect(fd, port: port) else {
            let error = errno
            close(fd)
            throw .socketFailed(operation: "connect to 127.0.0.1:\(port) (is the server running?)", errno: error)
        }
        return fd
    }

    /// Whether something accepts TCP connections on the loopback port now.
    public static func accepts(port: Int) -> Bool {
        guard let fd = try? newSocket() else { return false }
        defer { close(fd) }
        return connect(fd, port: port)
    }

    /// Whether process `pid` holds the socket listening on TCP `port` (IPv4 or IPv6), from `/proc/net/tcp*`
    /// and the process's descriptors: a port chosen with ``freePort()`` and taken by another program before
    /// a daemon bound it is not mistaken for the daemon's.
    public static func isListening(port: Int, pid: pid_t) -> Bool {
        let wanted = String(format: "%04X", port)
        var inodes: Set<String> = []
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ")
                // local_address is ADDRESS:PORT in hex; state 0A is LISTEN; the inode is field 9.
                guard fields.count > 9, fields[1].hasSuffix(":" + wanted), fields[3] == "0A" else { continue }
                inodes.insert(String(fields[9]))
            }
        }
        guard !inodes.isEmpty, let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd") else {
            return false
        }
        return descriptors.contains { descriptor in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(descriptor)") else {
                return false
            }
            return target.hasPrefix("socket:[") && inodes.contains(String(target.dropFirst(8).dropLast()))
        }
    }

    private static func newSocket() throws(TestSupportError) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else {
            throw .socketFailed(operation: "make a TCP socket", errno: errno)
        }
        return fd
    }

    /// Binds `fd` to 127.0.0.1:`port`; returns the port actually bound, or nil.
    private static func bind(_ fd: Int32, port: Int) -> Int? {
        var address = address(port: port)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        return bound ? Int(UInt16(bigEndian: address.sin_port)) : nil
    }

    private static func connect(_ fd: Int32, port: Int) -> Bool {
        var address = address(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
