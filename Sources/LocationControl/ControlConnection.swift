import LocationCore

/// One client connected to a ``ControlServer``, as the daemon's request handler sees it.
///
/// Keep it to push events to a watcher with ``send(_:)``; it stays valid (and harmless) after the client
/// has gone: ``send(_:)`` then returns `false`.
package struct ControlConnection: Sendable, Identifiable, Hashable {
    /// A number unique among this server's connections for its lifetime.
    package let id: UInt64
    let core: ControlServerCore

    init(id: UInt64, core: ControlServerCore) {
        self.id = id
        self.core = core
    }

    /// Queues one event line (a JSON object; a missing trailing `\n` is added) without blocking.
    ///
    /// The line is written as soon as the socket takes it. When the connection's output buffer is full the line
    /// is dropped and counted, and the client receives `watcher-lagged` with the count once it catches up.
    ///
    /// - Returns: `true` if the line was queued; `false` if it was counted as missed or the connection is closed.
    @discardableResult
    package func send(_ line: [UInt8]) -> Bool {
        core.send(line, to: id)
    }

    /// Closes the connection once what is already queued has been written.
    package func close() {
        core.closeConnection(id)
    }

    /// Whether the connection is still open.
    package var isOpen: Bool {
        core.state.withLock { $0.connections[id] != nil }
    }

    /// The user id of the process at the other end (SO_PEERCRED, taken when it connected); `nil` once the
    /// connection is closed or when the system did not say.
    package var peerUID: UInt32? {
        core.state.withLock { state in state.connections[id].flatMap { $0.peerUID == .max ? nil : $0.peerUID } }
    }

    /// Whether the connection has become a watcher (its `watch` request was answered with success).
    package var isWatching: Bool {
        core.state.withLock { $0.connections[id]?.isWatcher ?? false }
    }

    /// Connections are equal when they are the same connection of the same server.
    package static func == (lhs: ControlConnection, rhs: ControlConnection) -> Bool {
        lhs.id == rhs.id && lhs.core === rhs.core
    }

    /// Hashes the connection's identity.
    package func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(ObjectIdentifier(core))
    }
}
