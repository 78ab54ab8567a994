import Foundation
import LocationControl
import LocationCore
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// locationd's NMEA socket: a Unix stream socket that streams each fix, as the NMEA sentences of one epoch,
/// to every connection. GeoClue's `nmea-socket` source connects to it; so can gpsd, socat or a chart plotter.
///
/// Readers send nothing that matters: what they send is read and dropped. The server never closes a
/// connection while it runs, because GeoClue does not reconnect: a reader that falls behind by
/// ``maxBuffered`` bytes misses whole epochs (never part of one), counted, and gets the next epoch that fits.
/// Connections beyond ``maxConnections`` are closed at once, counted. One thread runs a poll(2) loop; an
/// epoch is written from the caller's thread when the connection has nothing waiting, so a reader that
/// keeps up gets each epoch in one write, at once.
final class NMEASocketServer: Sendable {
    /// What the socket has done, for `status`.
    struct Counts: Sendable, Equatable {
        /// Connections open now.
        var connections = 0
        /// Epochs queued to a connection, each connection counted.
        var epochsSent = 0
        /// Epochs a connection missed because it was too far behind.
        var epochsMissed = 0
        /// Connections closed at once because ``NMEASocketServer/maxConnections`` were open.
        var refused = 0
    }

    private struct Connection {
        let fd: Int32
        var output: [UInt8] = []
        var written = 0
        /// The reader shut its sending side: nothing more to read, but it may still read.
        var inputEnded = false
        /// A write failed for good (the reader went away).
        var failed = false
        var pending: Int { output.count - written }
    }

    private struct State {
        var connections: [Int32: Connection] = [:]
        var counts = Counts()
        var stopped = false
    }

    let path: String
    let maxConnections: Int
    let maxBuffered: Int
    private let socket: ListeningSocket
    private let wakeReader: Int32
    private let wakeWriter: Int32
    private let state = Locked(State())
    private let finished = Locked(false)
    private let logger: Logger
    private let onConnectionCount: @Sendable (Int) -> Void

    /// Creates the socket (0600, or 0660 and `group`'s), starts listening and starts its thread.
    ///
    /// - Parameter onConnectionCount: Called from the server's thread with the number of connections each
    ///   time it changes (a consumer runs the receiver only while someone reads).
    init(
        path: String, group: UInt32?, maxConnections: Int = 32, maxBuffered: Int = 64 * 1024, logger: Logger,
        onConnectionCount: @escaping @Sendable (Int) -> Void = { _ in }
    ) throws(ControlError) {
        self.path = path
        self.maxConnections = maxConnections
        self.maxBuffered = maxBuffered
        self.logger = logger
        self.onConnectionCount = onConnectionCount
        socket = try ListeningSocket(path: path, group: group, trustedDirectoryOnly: true)
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            let number = errno
            socket.closeAndRemove()
            throw ControlError(.io, "cannot create a wake-up descriptor for \(path): \(String(cString: strerror(number)))")
        }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        wakeReader = ends[0]
        wakeWriter = ends[1]
        let thread = Thread { [self] in run() }
        thread.name = "NMEA socket"
        thread.start()
    }

    deinit { stop() }

    /// What the socket has done so far.
    var counts: Counts { state.withLock { $0.counts } }

    /// Queues one epoch's sentences to every connection and writes them at once where nothing waits.
    func send(_ epoch: [UInt8]) {
        guard !epoch.isEmpty else { return }
        let wake = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            var wake = false
            for (fd, var connection) in state.connections {
                guard connection.pending + epoch.count <= maxBuffered else {
                    state.counts.epochsMissed += 1
                    continue
                }
                state.counts.epochsSent += 1
                if connection.pending == 0 {
                    connection.output.removeAll(keepingCapacity: true)
                    connection.written = 0
                }
                connection.output.append(contentsOf: epoch)
                if connection.pending == epoch.count { Self.flush(&connection) }
                if connection.pending > 0 || connection.failed { wake = true }
                state.connections[fd] = connection
            }
            return wake
        }
        if wake { poke() }
    }

    /// Closes every connection and the listener, removes the socket file, and waits for the thread to end.
    func stop() {
        let first = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return !state.stopped
        }
        guard first else { return }
        poke()
        // The loop ends within one poll; a bounded wait keeps a stop from ever hanging on it.
        let deadline = ContinuousClock.now + .seconds(5)
        while !finished.value, ContinuousClock.now < deadline { usleep(1000) }
    }

    private func poke() {
        var byte: UInt8 = 1
        _ = write(wakeWriter, &byte, 1)
    }

    /// Writes what the connection has waiting, as much as the socket takes now; a write that fails for good
    /// (the reader went away) marks it failed, for the loop to close.
    private static func flush(_ connection: inout Connection) {
        while connection.pending > 0, !connection.failed {
            let sent = connection.output.withUnsafeBytes { bytes in
                Glibc.send(connection.fd, bytes.baseAddress! + connection.written, connection.pending, Int32(MSG_NOSIGNAL))
            }
            if sent > 0 {
                connection.written += sent
            } else if sent < 0, errno == EINTR {
                continue
            } else {
                // EAGAIN: the loop writes the rest when the socket drains.
                if sent < 0, errno != EAGAIN, errno != EWOULDBLOCK { connection.failed = true }
                return
            }
        }
    }

    private func run() {
        var scratch = [UInt8](repeating: 0, count: 4096)
        var reportedCount = 0
        while true {
            var descriptors = [
                pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wakeReader, events: Int16(POLLIN), revents: 0),
            ]
            let stopped = state.withLock { state -> Bool in
                for (fd, connection) in state.connections {
                    var events: Int16 = connection.inputEnded ? 0 : Int16(POLLIN)
                    if connection.pending > 0 { events |= Int16(POLLOUT) }
                    descriptors.append(pollfd(fd: fd, events: events, revents: 0))
                }
                return state.stopped
            }
            if stopped { break }
            let ready = poll(&descriptors, nfds_t(descriptors.count), 1000)
            if ready < 0, errno != EINTR { usleep(10_000) }
            guard ready > 0 else { continue }
            if descriptors[1].revents != 0 {
                while read(wakeReader, &scratch, scratch.count) > 0 {}
            }
            // Connections first, while their descriptors are still the ones polled: accepting may close
            // hung-up ones and hand their numbers to new connections.
            for descriptor in descriptors.dropFirst(2) {
                service(descriptor.fd, events: descriptor.revents, scratch: &scratch)
            }
            if descriptors[0].revents & Int16(POLLIN) != 0 { acceptConnections() }
            let count = state.withLock { $0.connections.count }
            if count != reportedCount {
                reportedCount = count
                onConnectionCount(count)
            }
        }
        let open = state.withLock { state -> [Int32] in
            defer { state.connections.removeAll() }
            state.counts.connections = 0
            return Array(state.connections.keys)
        }
        for fd in open { close(fd) }
        socket.closeAndRemove()
        close(wakeReader)
        close(wakeWriter)
        if reportedCount != 0 { onConnectionCount(0) }
        finished.withLock { $0 = true }
    }

    private func acceptConnections() {
        for _ in 0..<64 {
            let fd = accept(socket.descriptor, nil, nil)
            guard fd >= 0 else {
                if errno == EINTR || errno == ECONNABORTED { continue }
                // Out of descriptors: the pending connection waits; a pause keeps the loop from spinning on it.
                if errno == EMFILE || errno == ENFILE { usleep(100_000) }
                return
            }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            let refusedCount = state.withLock { state -> Int? in
                // At the limit, connections whose reader has gone (and the loop has not seen yet) give
                // their places first: a client that connects and hangs up in a loop must not crowd
                // readers out.
                if state.connections.count >= maxConnections { Self.dropHungUp(&state) }
                guard state.connections.count < maxConnections else {
                    state.counts.refused += 1
                    return state.counts.refused
                }
                state.connections[fd] = Connection(fd: fd)
                state.counts.connections = state.connections.count
                return nil
            }
            if let refusedCount {
                close(fd)
                // Said once and then every hundredth time: a loop of connections must not flood the log.
                if refusedCount == 1 || refusedCount % 100 == 0 {
                    logger.warning(
                        "NMEA socket: closed a connection beyond the \(maxConnections) it serves (\(refusedCount.counted("connection", "connections")) closed so far)",
                        metadata: ["socket": "\(path)"])
                }
            }
        }
    }

    /// Closes the connections whose reader hung up or failed.
    private static func dropHungUp(_ state: inout State) {
        for fd in Array(state.connections.keys) {
            var descriptor = pollfd(fd: fd, events: 0, revents: 0)
            guard poll(&descriptor, 1, 0) > 0, descriptor.revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0 else { continue }
            state.connections[fd] = nil
            close(fd)
        }
        state.counts.connections = state.connections.count
    }

    /// Reads and drops what a reader sends, writes what waits for it, and closes it when it has gone: hung
    /// up, failed, or a write to it failed. A reader that only shut its sending side still gets every epoch.
    private func service(_ fd: Int32, events: Int16, scratch: inout [UInt8]) {
        var gone = events & Int16(POLLERR | POLLNVAL | POLLHUP) != 0
        var inputEnded = false
        if !gone, events & Int16(POLLIN) != 0 {
            let received = recv(fd, &scratch, scratch.count, 0)
            if received == 0 { inputEnded = true }
            if received < 0 && errno != EAGAIN && errno != EINTR { gone = true }
        }
        state.withLock { state in
            guard var connection = state.connections[fd] else { return }
            if inputEnded { connection.inputEnded = true }
            if events & Int16(POLLOUT) != 0 { Self.flush(&connection) }
            if gone || connection.failed {
                state.connections[fd] = nil
                state.counts.connections = state.connections.count
                close(fd)
                return
            }
            state.connections[fd] = connection
        }
    }
}
