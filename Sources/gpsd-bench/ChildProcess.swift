import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A helper process (gpsfake, gpspipe) in its own process group, for the CPU benchmark.
struct ChildProcess {
    let pid: pid_t

    /// Starts `arguments` with stdio on /dev/null in a new process group.
    init(_ arguments: [String]) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd in 0...2 {
            posix_spawn_file_actions_addopen(&actions, Int32(fd), "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0)
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, environ)
        guard status == 0 else { throw BenchError("cannot start \(arguments[0]): \(String(cString: strerror(status)))") }
        self.pid = pid
    }

    /// SIGTERM (gpsfake then stops and reaps its gpsd), SIGKILL of the group after 3 s, then reaps.
    func stop() {
        _ = kill(pid, SIGTERM)
        var status: Int32 = 0
        for _ in 0..<300 {
            if waitpid(pid, &status, WNOHANG) != 0 { return }
            usleep(10_000)
        }
        _ = kill(-pid, SIGKILL)
        _ = waitpid(pid, &status, 0)
    }
}
