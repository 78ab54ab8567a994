import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A helper process (gpsfake, gpspipe, locationd) in its own process group.
package struct ChildProcess: Sendable {
    package let pid: pid_t
    /// The read end of a pipe from the child's standard output, when it was captured; the caller closes it.
    package let standardOutput: Int32?

    /// Starts `arguments` in a new process group with stdio on /dev/null, or with standard output on a pipe
    /// that ``standardOutput`` reads.
    package init(_ arguments: [String], captureStandardOutput: Bool = false) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var pipeFDs: [Int32] = [-1, -1]
        if captureStandardOutput {
            guard pipe(&pipeFDs) == 0 else { throw BenchError("pipe() failed") }
            _ = fcntl(pipeFDs[0], F_SETFD, FD_CLOEXEC)
        }
        for fd in 0...2 {
            if fd == 1, captureStandardOutput {
                posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 1)
                posix_spawn_file_actions_addclose(&actions, pipeFDs[1])
            } else {
                posix_spawn_file_actions_addopen(&actions, Int32(fd), "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
            }
        }
        defer { if captureStandardOutput { close(pipeFDs[1]) } }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0)
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, environ)
        guard status == 0 else {
            if captureStandardOutput { close(pipeFDs[0]) }
            throw BenchError("cannot start \(arguments[0]): \(String(cString: strerror(status)))")
        }
        self.pid = pid
        standardOutput = captureStandardOutput ? pipeFDs[0] : nil
    }

    /// SIGTERM (gpsfake then stops and reaps its gpsd), SIGKILL of the group after 3 s, then reaps.
    package func stop() {
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
