#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

import LocationCore

/// A failure of the control socket: a stable machine-readable ``code`` and a message a person can act on.
///
/// The same type describes local failures (a bind that was refused, a client that timed out) and failures
/// the daemon reported in an `{"ok":false,"error":{...}}` reply, whose `code` may be any string the daemon
/// chose, for example `no-fix` from `LocationError`.
public struct ControlError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable error code; its raw value is what appears in JSON.
    public struct Code: ErrorCode {
        /// The code as it appears in JSON, for example `bad-request`.
        public var rawValue: String

        /// Creates a code from its JSON spelling.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The code of a location error the daemon reported, such as `no-fix`.
        public init(_ code: LocationError.Code) { self.rawValue = code.rawValue }

        /// Nothing listens on the socket path: the file is missing or the connection was refused.
        public static let notListening: Code = "not-listening"
        /// The socket or its directory is not accessible to this user.
        public static let permissionDenied: Code = "permission-denied"
        /// Another server already answers on the socket path.
        public static let alreadyListening: Code = "already-listening"
        /// The socket path is taken by something that is not a socket.
        public static let addressInUse: Code = "address-in-use"
        /// The socket path does not fit in `sun_path` (107 bytes plus the terminating NUL).
        public static let pathTooLong: Code = "path-too-long"
        /// A system call on the socket failed for another reason.
        public static let io: Code = "io"
        /// No reply arrived in time.
        public static let timeout: Code = "timeout"
        /// The peer closed the connection.
        public static let connectionClosed: Code = "connection-closed"
        /// A reply was not valid protocol JSON.
        public static let protocolError: Code = "protocol-error"
        /// A request line was not a JSON object with valid fields.
        public static let badRequest: Code = "bad-request"
        /// A request line exceeded the server's limit; the server closes the connection after replying.
        public static let requestTooLarge: Code = "request-too-large"
        /// A request named no command, or one the server does not know.
        public static let unknownCommand: Code = "unknown-command"
        /// The server already has its maximum number of connections.
        public static let tooManyConnections: Code = "too-many-connections"
        /// A watcher read too slowly and missed events (sent as an event line, never as a reply).
        public static let watcherLagged: Code = "watcher-lagged"
        /// The server is shutting down.
        public static let shuttingDown: Code = "shutting-down"
        /// The daemon produced a reply it could not encode.
        public static let internalError: Code = "internal"
        /// The socket's directory may be written by other users, who could replace the socket with their own.
        public static let unsafeDirectory: Code = "unsafe-directory"
        /// The process answering on the socket runs as a user this client does not trust (not the client's
        /// user, not root, not the owner of the socket's directory): perhaps an impostor's socket.
        public static let untrustedPeer: Code = "untrusted-peer"
    }

    /// What went wrong, as a stable code.
    public var code: Code
    /// One line for a person: what failed, where, and why.
    public var message: String

    /// Creates an error with a code and a message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `code: message`.
    public var description: String { "\(code.rawValue): \(message)" }
}

extension ControlError {
    /// An error for a failed system call on `path`, classified by `errno`.
    ///
    /// - Parameters:
    ///   - operation: What was attempted, e.g. `bind` or `connect to`.
    ///   - path: The socket path involved.
    ///   - errno: The C error number.
    static func system(_ operation: String, path: String, errno number: Int32) -> ControlError {
        let reason = String(cString: strerror(number))
        switch number {
        case EACCES, EPERM:
            return ControlError(.permissionDenied, "cannot \(operation) \(path): \(reason)")
        case ENOENT, ECONNREFUSED:
            return ControlError(.notListening, "no locationd is listening on \(path): \(reason)")
        case EADDRINUSE:
            return ControlError(.addressInUse, "cannot \(operation) \(path): \(reason)")
        case ENAMETOOLONG:
            return ControlError(.pathTooLong, "cannot \(operation) \(path): \(reason)")
        default:
            return ControlError(.io, "cannot \(operation) \(path): \(reason)")
        }
    }
}
