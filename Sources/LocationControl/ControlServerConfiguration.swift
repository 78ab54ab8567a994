/// Limits of a ``ControlServer``: how much one client may send, hold and cost.
///
/// Every limit exists so that a misbehaving or slow client costs bounded memory and never delays others.
package struct ControlServerConfiguration: Sendable, Hashable {
    /// The longest request line accepted, in bytes, without its `\n`. Default 64 KiB.
    ///
    /// A longer line gets a `request-too-large` reply and the connection is closed.
    package var maxRequestLength: Int
    /// The most connections open at once. Default 512.
    ///
    /// A connection beyond it receives one `too-many-connections` failure line and is closed.
    package var maxConnections: Int
    /// The most connections one user (but root) may have open. Default a quarter of ``maxConnections``.
    ///
    /// A user at the limit whose connections are all busy is refused; the last few places of
    /// ``maxConnections`` are root's alone, so that one user (or a few) never locks everyone out.
    package var maxConnectionsPerUser: Int
    /// The most bytes of unsent output held for one connection. Default 1 MiB.
    ///
    /// Event lines that do not fit are dropped and counted; once the buffer drains the watcher receives
    /// `{"type":"error","code":"watcher-lagged","message":"missed N events"}` before any newer event.
    package var maxOutputBuffer: Int
    /// The most bytes of unsent output held for all connections together. Default 64 MiB.
    ///
    /// While the total is over it, a watcher that already has output waiting (a slow one) gets no more event
    /// lines: they are counted, and reported as `watcher-lagged` once its buffer drains, as when its own
    /// buffer is full. Watchers that keep up (nothing waiting) still get every event. So 500 watchers that
    /// never read cost at most this much, not 500 × ``maxOutputBuffer``.
    package var maxTotalOutputBuffer: Int
    /// How long a connection with unsent output may go without reading any of it before it is closed.
    /// Default 30 s. A connection with nothing pending may stay idle for ever.
    package var stallTimeout: Duration
    /// The most requests read from one connection and not yet answered. Default 16.
    ///
    /// While a connection has this many, or its output buffer is full, the server stops reading from it, so a
    /// client that pipelines requests without reading replies is held back instead of growing memory.
    package var maxPendingRequests: Int
    /// The group given the socket file, or `nil` to leave it owner-only. Default `nil`.
    ///
    /// With a group the socket is mode 0660 and owned by that group, so its members may connect and nobody
    /// else may; a socket directory the server creates is then 0750 and owned by the group too (an existing
    /// one is left as it is, and must let the group in). The server must run as root or as a member of the
    /// group, or creating the socket fails with `permission-denied`.
    package var socketGroup: UInt32?

    /// Creates a configuration; every argument has the documented default.
    package init(
        maxRequestLength: Int = 64 * 1024,
        maxConnections: Int = 512,
        maxOutputBuffer: Int = 1024 * 1024,
        stallTimeout: Duration = .seconds(30),
        maxPendingRequests: Int = 16,
        maxTotalOutputBuffer: Int = 64 * 1024 * 1024,
        socketGroup: UInt32? = nil,
        maxConnectionsPerUser: Int? = nil
    ) {
        self.maxConnectionsPerUser = maxConnectionsPerUser ?? max(1, maxConnections / 4)
        self.socketGroup = socketGroup
        self.maxTotalOutputBuffer = maxTotalOutputBuffer
        self.maxRequestLength = maxRequestLength
        self.maxConnections = maxConnections
        self.maxOutputBuffer = maxOutputBuffer
        self.stallTimeout = stallTimeout
        self.maxPendingRequests = maxPendingRequests
    }
}
