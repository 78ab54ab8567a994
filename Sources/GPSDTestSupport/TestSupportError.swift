#if canImport(Glibc)
    import Glibc
#endif

/// Why a test-support helper could not do what it was asked: a program it needs, a process, a socket, or a
/// wait that ran out. Each case keeps the facts; ``code`` and ``message`` are made from them.
public enum TestSupportError: Error, Equatable, CustomStringConvertible {
    /// `program` is on neither `PATH` nor ``ExecutableLookup/systemFolders``; `install` says how to get it.
    case notInstalled(program: String, install: String)
    /// `posix_spawn` or `pipe` failed for `program` with `errno`.
    case spawnFailed(program: String, errno: Int32)
    /// A loopback socket call failed with `errno`; `operation` says which, e.g. "listen on 127.0.0.1:2947".
    case socketFailed(operation: String, errno: Int32)
    /// `what` did not happen within its time limit; the text says what, how long, and what was seen.
    case timedOut(String)

    /// A stable name for the kind of failure.
    public var code: String {
        switch self {
        case .notInstalled: "not-installed"
        case .spawnFailed: "spawn-failed"
        case .socketFailed: "socket-failed"
        case .timedOut: "timed-out"
        }
    }

    /// What went wrong and what to do about it, for a person.
    public var message: String {
        switch self {
        case .notInstalled(let program, let install):
            "\(program) is not installed (looked on PATH and in \(ExecutableLookup.systemFolders.joined(separator: ", "))): \(install)"
        case .spawnFailed(let program, let errno):
            "cannot start \(program): \(String(cString: strerror(errno)))"
        case .socketFailed(let operation, let errno):
            "cannot \(operation): \(String(cString: strerror(errno)))"
        case .timedOut(let what):
            what
        }
    }

    /// `code: message`.
    public var description: String { "\(code): \(message)" }
}
