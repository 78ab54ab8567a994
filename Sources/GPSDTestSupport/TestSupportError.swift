/// Why a test-support helper could not do what it was asked: a process, a socket or a tool it needs.
package struct TestSupportError: Error, Equatable, CustomStringConvertible {
    /// What kind of failure this is.
    package enum Code: String, Sendable {
        /// A program is not installed or not executable.
        case notInstalled = "not-installed"
        /// `posix_spawn` or `pipe` failed.
        case spawnFailed = "spawn-failed"
        /// A loopback socket could not be created, bound or connected.
        case socketFailed = "socket-failed"
        /// Something did not happen within its time limit.
        case timedOut = "timed-out"
    }

    /// What kind of failure this is.
    package let code: Code
    /// What went wrong and what to do about it, for a person.
    package let message: String

    /// Makes an error with `code` and an actionable `message`.
    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `code: message`.
    package var description: String { "\(code.rawValue): \(message)" }
}
