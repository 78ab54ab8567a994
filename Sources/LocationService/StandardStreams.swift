import Foundation
import LocationCore

#if canImport(Glibc)
    import Glibc
#endif

/// Whether the caller closed standard output or standard error (`>&-`, `2>&-`) before starting us.
///
/// A closed descriptor 1 or 2 does not stay free: the runtime opens its own descriptors (an eventfd, an
/// epoll instance) before `main`, and the lowest free number is taken. Writing "standard error" lines to
/// the runtime's eventfd would disturb it, so a closed stream is noticed once, first thing, and not written.
package enum StandardStreams {
    private struct Closed: Sendable {
        var output = false
        var error = false
    }

    private static let closed = Locked(Closed())

    /// Whether standard output was closed when the program started.
    package static var isOutputClosed: Bool { closed.value.output }
    /// Whether standard error was closed when the program started.
    package static var isErrorClosed: Bool { closed.value.error }

    /// Looks at descriptors 0, 1 and 2 once, first thing in `main`. A descriptor that is not open gets
    /// /dev/null, so that the next file opened (an `--output` file) cannot take its number; one marked
    /// close-on-exec was opened in this process (an exec closes such descriptors), so the caller's stream
    /// was closed and the number is the runtime's.
    package static func check() {
        var result = Closed()
        for descriptor in [STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO] {
            let flags = fcntl(descriptor, F_GETFD)
            let wasClosed = flags == -1 || flags & FD_CLOEXEC != 0
            if flags == -1 {
                // Read-only for standard output, so that writing fails as on a closed descriptor.
                let opened = open("/dev/null", descriptor == STDERR_FILENO ? O_WRONLY : O_RDONLY)
                if opened >= 0, opened != descriptor {
                    dup2(opened, descriptor)
                    close(opened)
                }
            }
            if descriptor == STDOUT_FILENO { result.output = wasClosed }
            if descriptor == STDERR_FILENO { result.error = wasClosed }
        }
        closed.withLock { $0 = result }
    }
}
