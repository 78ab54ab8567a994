import Foundation
import LocationCore
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A private gpsd started by `gpsfake` on a free loopback port, replaying one capture; the test owns the
/// whole process group and every shared-memory segment it leaves.
final class GPSFake: Sendable {
    /// gpsfake and gpsd, when both are installed.
    static let executables: (gpsfake: String, gpsd: String)? = {
        let gpsfake = ["/usr/bin/gpsfake", "/usr/local/bin/gpsfake"].first(where: FileManager.default.isExecutableFile)
        let gpsd = ["/usr/sbin/gpsd", "/usr/local/sbin/gpsd", "/usr/bin/gpsd"].first(where: FileManager.default.isExecutableFile)
        guard let gpsfake, let gpsd else { return nil }
        return (gpsfake, gpsd)
    }()

    /// Whether real-gpsd tests can run; prints a loud notice once when they cannot.
    static let isAvailable: Bool = {
        if executables == nil {
            let banner = String(repeating: "!", count: 78)
            print("""
                \(banner)
                SKIPPING gpsd integration tests: gpsfake/gpsd not found.
                Install the Debian packages gpsd, gpsd-clients and python3-gps to run them.
                \(banner)
                """)
        }
        return executables != nil
    }()

    /// The port gpsd listens on.
    let port: Int
    /// gpsfake's process id; gpsfake leads its own process group, which its gpsd joins.
    let pid: pid_t
    private let reaped = Atomic<Bool>(false)

    /// Starts `gpsfake -1 -q -P port -c cycle log` in a process group of its own.
    init(log: URL, port: Int? = nil, cycle: Double = 0.05) throws {
        guard let tools = Self.executables else { throw TestFailure("gpsfake is not installed") }
        self.port = try port ?? Self.freePort()
        let arguments = [tools.gpsfake, "-1", "-q", "-P", String(self.port), "-c", String(cycle), log.path]
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = "/usr/sbin:/usr/bin:/sbin:/bin:" + (environment["PATH"] ?? "")
        SharedMemory.processStarted()
        do {
            pid = try Self.spawn(arguments, environment: environment)
        } catch {
            SharedMemory.processEnded()
            throw error
        }
    }

    /// posix_spawn with stdio on /dev/null and a new process group (Foundation's Process cannot do both).
    private static func spawn(_ arguments: [String], environment: [String: String]) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd in 0...2 {
            posix_spawn_file_actions_addopen(&actions, Int32(fd), "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Default signal handling: the test runner's blocked or ignored signals would otherwise be
        // inherited, and gpsfake would not end on SIGTERM (stop() would wait for its SIGKILL fallback).
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        posix_spawnattr_setpgroup(&attributes, 0)
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
        guard status == 0 else {
            throw TestFailure("cannot start \(arguments[0]): \(String(cString: strerror(status)))")
        }
        return pid
    }

    /// Waits until gpsd accepts connections on the port.
    func waitUntilAccepting(timeout: Duration = .seconds(20)) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            if Self.canConnect(port: port) {
                if let daemon = gpsdPID { SharedMemory.daemonStarted(daemon) }
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestFailure("gpsd on port \(port) did not start within \(timeout)")
    }

    /// The gpsd that gpsfake started (a child of gpsfake), found through /proc.
    var gpsdPID: pid_t? {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return nil }
        for entry in entries {
            guard let candidate = pid_t(entry),
                let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            let name = stat[stat.index(after: stat.firstIndex(of: "(")!)..<close]
            let fields = stat[stat.index(close, offsetBy: 2)...].split(separator: " ")
            // fields[0] is the state, fields[1] the parent pid.
            if name == "gpsd", fields.count > 1, pid_t(fields[1]) == pid, fields[0] != "Z" { return candidate }
        }
        return nil
    }

    /// Sends a signal to gpsd alone.
    @discardableResult
    func signalDaemon(_ signal: Int32) -> Bool {
        guard let daemon = gpsdPID else { return false }
        return kill(daemon, signal) == 0
    }

    /// Waits until gpsfake has exited (it does once its gpsd died); returns whether it did in time.
    func waitForExit(timeout: Duration) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            if reap(blocking: false) { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return reap(blocking: false)
    }

    /// Reaps gpsfake; returns whether it has exited.
    private func reap(blocking: Bool) -> Bool {
        if reaped.load(ordering: .sequentiallyConsistent) { return true }
        var status: Int32 = 0
        let result = waitpid(pid, &status, blocking ? 0 : WNOHANG)
        if result == pid || (result < 0 && errno == ECHILD) {
            reaped.store(true, ordering: .sequentiallyConsistent)
            return true
        }
        return false
    }

    /// Ends gpsfake and gpsd and removes the port's shared-memory segment.
    ///
    /// SIGTERM lets gpsfake terminate and reap its gpsd; SIGKILL of the group is the fallback.
    func stop() {
        if !reaped.load(ordering: .sequentiallyConsistent) {
            _ = kill(-pid, SIGCONT)
            _ = kill(pid, SIGTERM)
            var exited = false
            for _ in 0..<300 {
                if reap(blocking: false) { exited = true; break }
                usleep(10_000)
            }
            if !exited {
                _ = kill(-pid, SIGKILL)
                _ = reap(blocking: true)
            }
        }
        guard !stopped.exchange(true, ordering: .sequentiallyConsistent) else { return }
        // gpsd's own export segment: gpsfake derives its key from the port.
        SharedMemory.remove(key: Int32(bitPattern: 0x4770_0000 | UInt32(port & 0xFFFF)))
        SharedMemory.processEnded()
    }

    private let stopped = Atomic<Bool>(false)

    deinit { stop() }

    /// A loopback TCP port that was free a moment ago.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket() failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw TestFailure("cannot bind a loopback port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether something accepts TCP connections on the loopback port.
    static func canConnect(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
