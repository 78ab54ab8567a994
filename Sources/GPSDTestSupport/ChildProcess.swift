import Foundation
import LocationCore

#if canImport(Glibc)
    import Glibc
#endif

/// A helper process (gpsd, gpsfake, gpspipe, locationd) that a test or benchmark starts and owns, with
/// everything it starts in turn.
///
/// The child leads a process group of its own, so ``stop(signal:grace:)`` can end its children too (gpsfake
/// starts gpsd), and it starts with no signal blocked and every signal at its default action: a test
/// runner's blocked or ignored signals would otherwise be inherited, and gpsfake or gpsd would not end on
/// SIGTERM. Its standard streams are on /dev/null, or its standard output on a pipe.
///
/// The process is reaped exactly once, however many times and from however many threads ``reap()``,
/// ``wait()`` and ``stop(signal:grace:)`` are called; after that, nothing is sent to its process id,
/// which the system may already have given to another process. Dropping the last reference stops it.
public final class ChildProcess: Sendable {
    /// How a child process ended.
    public enum Termination: Equatable, Sendable, CustomStringConvertible {
        /// It exited with this status.
        case exited(Int32)
        /// A signal ended it.
        case signalled(Int32)
        /// Someone else reaped it, so how it ended is not known.
        case unknown

        /// Decodes a `waitpid` status.
        init(waitStatus status: Int32) {
            let signal = status & 0x7F
            self = signal == 0 ? .exited((status >> 8) & 0xFF) : .signalled(signal)
        }

        /// `exit status N` or `signal N`.
        public var description: String {
            switch self {
            case .exited(let status): "exit status \(status)"
            case .signalled(let signal): "signal \(signal)"
            case .unknown: "reaped elsewhere"
            }
        }
    }

    /// The child's process id, which is also its process group id.
    public let pid: pid_t
    /// The path that was started.
    public let executable: String
    /// The read end of a pipe from the child's standard output, when it was captured; the caller closes it.
    public let standardOutput: Int32?
    /// Set once, when the child has been reaped.
    private let termination = Locked<Termination?>(nil)

    /// Starts `arguments` in a new process group.
    ///
    /// - Parameters:
    ///   - arguments: the program, by name (looked up with ``ExecutableLookup``) or path, then its arguments.
    ///   - environment: variables set, or replaced, on top of this process's environment.
    ///   - captureStandardOutput: put standard output on a pipe that ``standardOutput`` reads, rather
    ///     than on /dev/null.
    public init(
        _ arguments: [String], environment: [String: String] = [:], captureStandardOutput: Bool = false
    ) throws(TestSupportError) {
        guard let name = arguments.first else { throw .spawnFailed(program: "(no program given)", errno: EINVAL) }
        guard let executable = ExecutableLookup.path(of: name) else {
            throw .notInstalled(program: name, install: "install it, or give its path")
        }
        var output: [Int32] = [-1, -1]
        if captureStandardOutput {
            guard pipe(&output) == 0 else {
                throw .spawnFailed(program: name, errno: errno)
            }
            // Close-on-exec, so children started by other threads do not hold the pipe open (the child's
            // copy on its standard output is not affected).
            _ = fcntl(output[0], F_SETFD, FD_CLOEXEC)
            _ = fcntl(output[1], F_SETFD, FD_CLOEXEC)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if captureStandardOutput {
            posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        posix_spawnattr_setpgroup(&attributes, 0)
        let argv = [executable] + arguments.dropFirst()
        let cArguments = argv.map { strdup($0) } + [nil]
        let cEnvironment: [UnsafeMutablePointer<CChar>?]? =
            environment.isEmpty
            ? nil
            : ProcessInfo.processInfo.environment.merging(environment) { $1 }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            cArguments.forEach { free($0) }
            cEnvironment?.forEach { free($0) }
        }
        var pid: pid_t = 0
        let status =
            if let cEnvironment {
                posix_spawn(&pid, executable, &actions, &attributes, cArguments, cEnvironment)
            } else {
                posix_spawn(&pid, executable, &actions, &attributes, cArguments, environ)
            }
        if captureStandardOutput { close(output[1]) }
        guard status == 0 else {
            if captureStandardOutput { close(output[0]) }
            throw .spawnFailed(program: executable, errno: status)
        }
        self.pid = pid
        self.executable = executable
        standardOutput = captureStandardOutput ? output[0] : nil
    }

    deinit { stop() }

    /// Sends `signal` to the child alone; false when it has been reaped or the signal could not be sent.
    @discardableResult
    public func signal(_ signal: Int32) -> Bool {
        // Under the lock, so the child cannot be reaped (and its id reused) between the check and the kill.
        termination.withLock { $0 == nil && kill(pid, signal) == 0 }
    }

    /// Sends `signal` to the child's whole process group; false when the child has been reaped or the
    /// signal could not be sent.
    @discardableResult
    public func signalGroup(_ signal: Int32) -> Bool {
        termination.withLock { $0 == nil && kill(-pid, signal) == 0 }
    }

    /// Reaps the child if it has exited, without waiting; returns how it ended, or nil while it runs.
    @discardableResult
    public func reap() -> Termination? {
        termination.withLock { termination in
            if let termination { return termination }
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid {
                termination = Termination(waitStatus: status)
            } else if result < 0, errno == ECHILD {
                termination = .unknown
            }
            return termination
        }
    }

    /// Waits until the child exits and reaps it.
    @discardableResult
    public func wait() -> Termination {
        termination.withLock { termination in
            if let termination { return termination }
            var status: Int32 = 0
            var result: pid_t
            repeat { result = waitpid(pid, &status, 0) } while result < 0 && errno == EINTR
            let ended = result == pid ? Termination(waitStatus: status) : .unknown
            termination = ended
            return ended
        }
    }

    /// Waits up to `timeout` for the child to exit, polling; returns how it ended, or nil if it still runs.
    @discardableResult
    public func waitForExit(timeout: Duration) -> Termination? {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            if let ended = reap() { return ended }
            usleep(5_000)
        }
        return reap()
    }

    /// Waits up to `timeout` for the child to exit, polling without blocking a thread; returns how it
    /// ended, or nil if it still runs.
    @discardableResult
    public func waitForExit(timeout: Duration) async -> Termination? {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            if let ended = reap() { return ended }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return reap()
    }

    /// Ends the child and everything in its process group, and reaps it; safe to call again.
    ///
    /// Sends `signal` (and SIGCONT, in case the group was stopped) and gives the child `grace` to exit,
    /// so gpsfake can end its gpsd itself; then SIGKILL goes to the whole group, which ends the child if
    /// it is still there and anything it left behind, and the child is reaped. Returns once no live
    /// process is left in the group (at most 2 s more), so their shared-memory segments are detached.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM, grace: Duration = .seconds(3)) -> Termination {
        if let ended = termination.value { return ended }
        termination.withLock { termination in
            guard termination == nil else { return }
            _ = kill(pid, signal)
            _ = kill(-pid, SIGCONT)
        }
        let clock = ContinuousClock()
        let deadline = clock.now + grace
        while clock.now < deadline, !hasExitedUnreaped { usleep(5_000) }
        // The child is still unreaped here (exited or not), so its id, which is the group's, is not reused.
        termination.withLock { termination in
            if termination == nil { _ = kill(-pid, SIGKILL) }
        }
        let ended = wait()
        let limit = clock.now + .seconds(2)
        while clock.now < limit, Self.hasLiveMembers(group: pid) { usleep(5_000) }
        return ended
    }

    /// The live processes that the child started and that are named `name` (as in /proc/PID/stat).
    public func children(named name: String) -> [pid_t] {
        Self.processes().filter { $0.parent == pid && $0.name == name && $0.state != "Z" }.map(\.pid)
    }

    /// Whether the child has exited but is not reaped yet (or was reaped elsewhere); does not reap it.
    private var hasExitedUnreaped: Bool {
        termination.withLock { termination in
            if termination != nil { return true }
            var info = siginfo_t()
            let result = waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT)
            return (result == 0 && info.si_signo != 0) || (result < 0 && errno == ECHILD)
        }
    }

    /// Whether a process that is not a zombie is still in process group `group`.
    private static func hasLiveMembers(group: pid_t) -> Bool {
        processes().contains { $0.group == group && $0.state != "Z" }
    }

    /// One line of /proc/PID/stat: the fields used here.
    private struct ProcessEntry {
        var pid: pid_t
        var name: Substring
        var state: Substring
        var parent: pid_t
        var group: pid_t
    }

    /// Every process, from /proc/PID/stat (`pid (name) state ppid pgrp ...`; the name may hold spaces).
    private static func processes() -> [ProcessEntry] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap { entry in
            guard let pid = pid_t(entry),
                let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")"),
                stat.index(close, offsetBy: 2, limitedBy: stat.endIndex) != nil
            else { return nil }
            let fields = stat[stat.index(close, offsetBy: 2)...].split(separator: " ")
            guard fields.count > 2, let parent = pid_t(fields[1]), let group = pid_t(fields[2]) else { return nil }
            return ProcessEntry(
                pid: pid, name: stat[stat.index(after: open)..<close], state: fields[0], parent: parent, group: group)
        }
    }
}
