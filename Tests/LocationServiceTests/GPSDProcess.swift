import Foundation
import Synchronization

/// A real gpsd on a private loopback port reading a never-ending feed (``NMEAFeedServer``), that a test
/// can kill and start again on the same port as often as it likes, the receiver running on meanwhile.
///
/// Each gpsd runs in a process group of its own with standard streams on /dev/null. ``stop()`` ends it
/// and removes the System V shared memory this gpsd created: its export segment (key derived from the
/// port, as gpsfake does) and the NTP segments, when one of our gpsd processes created them and nothing
/// is attached any more.
final class GPSDProcess: Sendable {
    static let executable: String? = ["/usr/sbin/gpsd", "/usr/local/sbin/gpsd", "/usr/bin/gpsd"]
        .first(where: FileManager.default.isExecutableFile)

    let port: Int
    let feedPort: Int
    private let current = Mutex<pid_t?>(nil)
    private let started = Mutex<Set<pid_t>>([])

    init(feedPort: Int) throws {
        guard Self.executable != nil else { throw LocationServiceTestFailure("gpsd is not installed") }
        self.feedPort = feedPort
        port = try FakeGPSD.freePort()
    }

    deinit { stop() }

    /// The export segment's key: gpsfake's scheme, so no two test gpsd share one.
    var sharedMemoryKey: Int32 { Int32(bitPattern: 0x4770_0000 | UInt32(port & 0xFFFF)) }

    /// Starts gpsd (`-N -n -b -S port tcp://127.0.0.1:feed`) and waits until it accepts connections;
    /// returns that moment.
    @discardableResult
    func start(timeout: TimeInterval = 20) throws -> ContinuousClock.Instant {
        guard current.withLock({ $0 }) == nil else { throw LocationServiceTestFailure("gpsd is already running") }
        var environment = ProcessInfo.processInfo.environment
        environment["GPSD_SHM_KEY"] = String(format: "0x%08x", UInt32(bitPattern: sharedMemoryKey))
        let pid = try spawn(
            [Self.executable!, "-N", "-n", "-b", "-S", String(port), "tcp://127.0.0.1:\(feedPort)"], environment: environment)
        current.withLock { $0 = pid }
        _ = started.withLock { $0.insert(pid) }
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if FakeGPSD.accepts(port: port) { return .now }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                current.withLock { $0 = nil }
                throw LocationServiceTestFailure("gpsd on port \(port) exited at start (status \(status))")
            }
            usleep(2_000)
        }
        throw LocationServiceTestFailure("gpsd on port \(port) did not accept connections within \(timeout) s")
    }

    /// Sends `signal` to the running gpsd and waits until it has exited.
    func kill(_ signal: Int32 = SIGKILL) {
        guard let pid = current.withLock({ $0 }) else { return }
        _ = Glibc.kill(pid, signal)
        var status: Int32 = 0
        let deadline = Date().addingTimeInterval(10)
        while waitpid(pid, &status, WNOHANG) == 0 {
            if Date() > deadline {
                _ = Glibc.kill(-pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                break
            }
            usleep(2_000)
        }
        current.withLock { $0 = nil }
    }

    /// Ends gpsd for good and removes the shared memory it left.
    func stop() {
        kill(SIGTERM)
        let ours = started.withLock { $0 }
        guard !ours.isEmpty else { return }
        let ntpKeys = Set((0..<8).map { Int32(0x4E54_5030 + $0) })
        for segment in Self.segments() where segment.attached == 0 {
            if segment.key == sharedMemoryKey || (ntpKeys.contains(segment.key) && ours.contains(segment.creator)) {
                let id = shmget(key_t(segment.key), 0, 0)
                if id >= 0 { _ = shmctl(id, IPC_RMID, nil) }
            }
        }
    }

    /// Every segment, from /proc/sysvipc/shm (columns: key shmid perms size cpid lpid nattch ...).
    private static func segments() -> [(key: Int32, creator: pid_t, attached: Int)] {
        guard let text = try? String(contentsOfFile: "/proc/sysvipc/shm", encoding: .utf8) else { return [] }
        return text.split(separator: "\n").dropFirst().compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 6, let key = Int32(fields[0]), let creator = pid_t(fields[4]),
                let attached = Int(fields[6])
            else { return nil }
            return (key, creator, attached)
        }
    }

    /// posix_spawn with stdio on /dev/null and a new process group.
    private func spawn(_ arguments: [String], environment: [String: String]) throws -> pid_t {
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
        // inherited, and gpsd would not stop on SIGTERM.
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
            throw LocationServiceTestFailure("cannot start \(arguments[0]): \(String(cString: strerror(status)))")
        }
        return pid
    }
}
