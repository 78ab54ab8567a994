import LocationCore

/// The daemon's control socket: a Unix stream socket that answers JSON-line requests and streams events to
/// watchers.
///
/// ```swift
/// let server = try ControlServer(path: "/run/user/1000/locationd/control.sock") { request, connection in
///     switch request {
///     case .status: .status(currentStatus)
///     case .watch: .watching
///     ...
///     }
/// }
/// server.broadcast(Array("{\"type\":\"state\",\"state\":\"background\"}\n".utf8))
/// server.stop()
/// ```
///
/// ## Socket file
/// Missing parent directories are created with mode 0700. A leftover socket file that nothing answers on is
/// replaced; if a server answers, creation fails with `already-listening`. The socket file is created with mode
/// 0600 (owner only) before the server listens, and ``stop()`` removes it. With
/// ``ControlServerConfiguration/socketGroup`` it is given to that group and made 0660 before the server
/// listens, so the group's members may connect and nobody else ever could.
///
/// ## Protocol
/// Each request is one JSON object on one `\n`-terminated UTF-8 line (see ``ControlRequest``); each gets one
/// reply line (see ``ControlReply``), in order. A line longer than
/// ``ControlServerConfiguration/maxRequestLength`` gets a `request-too-large` failure and the connection is
/// closed; malformed JSON gets `bad-request` and the connection stays open; a missing or unknown command gets
/// `unknown-command`. After a successful `watch` reply the connection also receives event lines pushed with
/// ``broadcast(_:)`` or ``ControlConnection/send(_:)``.
///
/// ## Threads and limits
/// One dedicated thread runs a poll(2) loop over non-blocking sockets; the handler runs in a Swift task per
/// connection. Each connection's unsent output is bounded; a watcher that does not keep up misses events,
/// which are counted and reported to it as a `watcher-lagged` event line once it catches up, and a connection
/// that reads nothing of its pending output for ``ControlServerConfiguration/stallTimeout`` is closed.
package final class ControlServer: Sendable {
    /// Answers one request; called in order for each connection, concurrently across connections.
    ///
    /// For `watch`, a success reply turns the connection into a watcher.
    package typealias Handler = @Sendable (ControlRequest, ControlConnection) async -> ControlReply

    /// Whether a socket could be made at `path` (see `ControlServerCore.checkPlace(of:)`), without making it.
    package static func checkPlace(of path: String, group: UInt32? = nil, trustedDirectoryOnly: Bool = false) throws(ControlError) {
        try ListeningSocket.checkPlace(of: path, group: group, trustedDirectoryOnly: trustedDirectoryOnly)
    }

    private let core: ControlServerCore

    /// Creates the socket file, starts listening, and starts the event loop thread.
    ///
    /// - Parameters:
    ///   - path: The socket path; at most 107 bytes.
    ///   - configuration: Limits per connection and in total.
    ///   - handler: Answers requests.
    ///   - onClose: Called once for each connection the server closes (the client left, failed or stalled),
    ///     after it is gone; not for those closed by ``stop()``.
    /// - Throws: ``ControlError`` naming the path and the reason: `path-too-long`, `permission-denied`,
    ///   `already-listening` (another server answers on `path`), `address-in-use` (a non-socket file is in the
    ///   way), or `io`.
    package init(
        path: String,
        configuration: ControlServerConfiguration = ControlServerConfiguration(),
        handler: @escaping Handler,
        onClose: (@Sendable (ControlConnection) -> Void)? = nil
    ) throws(ControlError) {
        core = try ControlServerCore(path: path, configuration: configuration, handler: handler, onClose: onClose)
        try core.start()
    }

    deinit {
        core.stop()
    }

    /// The socket path.
    package var path: String { core.path }

    /// The limits the server runs with.
    package var configuration: ControlServerConfiguration { core.configuration }

    /// Queues one event line (a JSON object; a missing trailing `\n` is added) to every watcher, without blocking.
    ///
    /// - Returns: How many watchers queued it; the others were behind and counted it as missed.
    @discardableResult
    package func broadcast(_ line: [UInt8]) -> Int {
        core.broadcast(line, to: nil)
    }

    /// Queues one event line to those of `connections` that are watchers, as ``broadcast(_:)`` does (the
    /// same limits, a watcher behind missing it, counted).
    ///
    /// - Returns: How many watchers queued it.
    @discardableResult
    package func broadcast(_ line: [UInt8], to connections: Set<ControlConnection>) -> Int {
        core.broadcast(line, to: Set(connections.lazy.filter { $0.core === self.core }.map(\.id)))
    }

    /// Queues a held batch (its batch line and its `count` location lines, as one unit) to those of
    /// `connections` that are watchers: to each whole, whatever its size, while that watcher keeps up, else
    /// not at all (its `watcher-lagged` line counts the fixes it missed). The bytes are shared, not copied.
    ///
    /// - Returns: How many watchers queued it.
    @discardableResult
    package func broadcastBatch(_ lines: [UInt8], count: Int, to connections: Set<ControlConnection>) -> Int {
        core.broadcast(
            lines, to: Set(connections.lazy.filter { $0.core === self.core }.map(\.id)), heldFixes: max(1, count))
    }

    /// Closes those of `connections` that are this server's once what is queued for them is written (after
    /// `line`, when one is given, which they get whatever their buffers hold).
    package func close(_ connections: Set<ControlConnection>, after line: [UInt8]? = nil) {
        for connection in connections where connection.core === core {
            if let line { _ = core.send(line, to: connection.id) }
            core.closeConnection(connection.id)
        }
    }

    /// How many connections are open.
    package var connectionCount: Int {
        core.state.withLock { $0.connections.count }
    }

    /// How many open connections are watchers.
    package var watcherCount: Int {
        core.state.withLock { $0.watcherCount }
    }

    /// Bytes of output held for all connections together (bounded by
    /// ``ControlServerConfiguration/maxTotalOutputBuffer`` plus one line per watcher).
    package var bufferedOutputBytes: Int {
        core.state.withLock { $0.connections.values.reduce(0) { $0 + $1.output.count } }
    }

    /// Closes every connection and the listener, removes the socket file, and waits for the loop thread to end.
    ///
    /// Handlers still running are cancelled; their replies are discarded. Calling `stop()` again does nothing.
    package func stop() {
        core.stop()
    }
}
