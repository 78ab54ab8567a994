import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A private gpsd fed by gpsfake from a generated 10 Hz capture, on its own port. ``stop()`` ends gpsfake,
/// the gpsd it started (which outlives it) and the shared-memory segments that gpsd created.
package struct GPSFake: Sendable {
    /// gpsd's TCP port on 127.0.0.1.
    package let port: Int
    private let process: ChildProcess
    private let capture: URL
    private let shm: SharedMemoryCleanup

    /// Whether gpsfake is installed.
    package static var isInstalled: Bool {
        ProcessMeasurement.which("gpsfake") != nil && ProcessMeasurement.which("gpsd") != nil
    }

    /// Writes a capture of `epochs` 10 Hz epochs, starts gpsfake on a free port and returns as soon as the
    /// port accepts connections (sentences sent before the first client watches are lost).
    package static func start(epochs: Int) throws -> GPSFake {
        let capture = try writeSyntheticCapture(epochs: epochs)
        let shm = SharedMemoryCleanup()
        let port = try freePort()
        let process: ChildProcess
        do {
            process = try ChildProcess(["gpsfake", "-1", "-q", "-P", String(port), "-c", "0.05", capture.path])
        } catch {
            try? FileManager.default.removeItem(at: capture)
            throw error
        }
        let fake = GPSFake(port: port, process: process, capture: capture, shm: shm)
        let deadline = ContinuousClock.now + .seconds(20)
        while !accepts(port: port) {
            guard ContinuousClock.now < deadline else {
                fake.stop()
                throw BenchError("gpsfake's gpsd never listened on port \(port)")
            }
            usleep(5_000)
        }
        return fake
    }

    /// Stops gpsfake and its gpsd, removes the capture and the gpsd's shared-memory segments.
    package func stop() {
        let daemons = Self.gpsdProcesses(port: port)
        process.stop()
        for pid in daemons + Self.gpsdProcesses(port: port) {
            _ = kill(pid, SIGKILL)
        }
        usleep(50_000)
        shm.removeNew()
        try? FileManager.default.removeItem(at: capture)
    }

    /// The gpsd processes serving `port` (`gpsd ... -S PORT ...`), found in /proc.
    private static func gpsdProcesses(port: Int) -> [pid_t] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap { entry -> pid_t? in
            guard let pid = pid_t(entry),
                let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline")
            else { return nil }
            let arguments = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            guard let program = arguments.first, program.hasSuffix("gpsd"),
                let flag = arguments.firstIndex(of: "-S"), flag + 1 < arguments.count, arguments[flag + 1] == String(port)
            else { return nil }
            return pid
        }
    }

    /// Whether a TCP connection to 127.0.0.1:`port` is accepted.
    package static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// The IPv4 loopback address with `port`.
    package static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return address
    }

    /// A port nobody listens on now (bound and released).
    private static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchError("socket() failed") }
        defer { close(fd) }
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard ok else { throw BenchError("cannot find a free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
