#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LocationCore

/// The machinery behind ``ControlServer``: the listening socket, the poll(2) loop on its own thread, and the
/// connections' state.
///
/// Threading: the loop thread is the only one that accepts, reads, closes descriptors, or polls. Other threads
/// (request tasks, `broadcast`, `send`) only append output and write it without blocking, under the same lock,
/// and wake the loop through an eventfd when the loop must look again. Because descriptors are closed only by
/// the loop thread and only under the lock, a descriptor is never used after it is closed or reused.
final class ControlServerCore: Sendable {
    let path: String
    let configuration: ControlServerConfiguration
    let handler: ControlServer.Handler
    let onClose: (@Sendable (ControlConnection) -> Void)?
    private let listener: Int32
    /// A self-pipe: any thread writes a byte to make poll(2) return; the loop drains it.
    private let wakeReader: Int32
    private let wakeWriter: Int32
    /// The bound socket file's device and inode, so shutdown removes our file and never a successor's.
    private let socketIdentity: (device: UInt64, inode: UInt64)
    let state = Locked(ServerState())

    init(
        path: String, configuration: ControlServerConfiguration, handler: @escaping ControlServer.Handler,
        onClose: (@Sendable (ControlConnection) -> Void)? = nil
    ) throws(ControlError) {
        self.path = path
        self.configuration = configuration
        self.handler = handler
        self.onClose = onClose
        let socket = try ListeningSocket(path: path, group: configuration.socketGroup)
        let fd = socket.descriptor
        var pipeEnds: [Int32] = [-1, -1]
        guard pipe(&pipeEnds) == 0 else {
            let number = errno
            socket.closeAndRemove()
            throw ControlError.system("create a wake-up descriptor for", path: path, errno: number)
        }
        for end in pipeEnds {
            UnixSocket.setNonBlocking(end)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        listener = fd
        wakeReader = pipeEnds[0]
        wakeWriter = pipeEnds[1]
        socketIdentity = socket.identity
        let reserve = open("/dev/null", O_RDONLY | O_CLOEXEC)
        state.withLock { $0.reserveFD = reserve }
    }

    // MARK: - Setup

    /// Starts the event loop thread.
    func start() throws(ControlError) {
        let retained = Unmanaged.passRetained(self)
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { context in
            let core = Unmanaged<ControlServerCore>.fromOpaque(context!).takeRetainedValue()
            core.run()
            return nil
        }, retained.toOpaque())
        guard result == 0 else {
            retained.release()
            shutDown()
            throw ControlError(.io, "cannot start the control socket thread: \(String(cString: strerror(result)))")
        }
        state.withLock { $0.thread = thread }
    }

    // MARK: - Stopping

    /// Closes every connection and the listener, removes the socket file, and joins the loop thread.
    func stop() {
        let thread: pthread_t? = state.withLock { state in
            guard !state.stopping else { return nil }
            state.stopping = true
            wake(state)
            let thread = state.thread
            state.thread = nil
            return thread
        }
        guard let thread else { return }
        if pthread_equal(thread, pthread_self()) == 0 {
            pthread_join(thread, nil)
        }
    }

    /// Releases everything; runs on the loop thread as it exits (or in `start` when the thread never ran).
    private func shutDown() {
        state.withLock { state in
            for (_, connection) in state.connections {
                connection.requests.finish()
                connection.task?.cancel()
                close(connection.fd)
            }
            state.connections.removeAll()
            state.watcherCount = 0
            ListeningSocket.closeAndRemove(listener, path: path, identity: socketIdentity)
            close(wakeReader)
            close(wakeWriter)
            if state.reserveFD >= 0 { close(state.reserveFD) }
            state.reserveFD = -1
            state.stopping = true
            state.stopped = true
        }
    }

    /// Makes the loop look again; call with the lock held.
    private func wake(_ state: borrowing ServerState) {
        guard !state.stopped else { return }
        // A full pipe already guarantees a wake-up, so a failed write needs no retry.
        var byte: UInt8 = 1
        _ = write(wakeWriter, &byte, 1)
    }

    // MARK: - Event loop

    /// The poll loop: sleeps in poll(2) until a socket is ready, a wake-up arrives, or a stall deadline passes.
    private func run() {
        var descriptors: [pollfd] = []
        var ids: [UInt64] = []
        var scratch = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            descriptors.removeAll(keepingCapacity: true)
            ids.removeAll(keepingCapacity: true)
            let plan: (stop: Bool, timeout: Duration?) = state.withLock { state in
                if state.stopping { return (true, nil) }
                descriptors.append(pollfd(fd: wakeReader, events: Int16(POLLIN), revents: 0))
                var nearest: ContinuousClock.Instant?
                if let resume = state.acceptPausedUntil, resume > .now {
                    descriptors.append(pollfd(fd: listener, events: 0, revents: 0))
                    nearest = resume
                } else {
                    state.acceptPausedUntil = nil
                    descriptors.append(pollfd(fd: listener, events: Int16(POLLIN), revents: 0))
                }
                let overTotal = state.outputOverTotal(configuration)
                for (id, connection) in state.connections {
                    var events: Int16 = 0
                    if connection.wantsInput(configuration, overTotal: overTotal) { events |= Int16(POLLIN) }
                    if !connection.output.isEmpty { events |= Int16(POLLOUT) }
                    descriptors.append(pollfd(fd: connection.fd, events: events, revents: 0))
                    ids.append(id)
                    if let deadline = connection.stallDeadline {
                        nearest = nearest.map { min($0, deadline) } ?? deadline
                    }
                }
                return (false, nearest.map { $0 - .now })
            }
            if plan.stop { break }
            let ready = poll(&descriptors, nfds_t(descriptors.count), UnixSocket.pollTimeout(plan.timeout))
            if ready < 0 && errno != EINTR {
                // poll only fails here on ENOMEM; back off instead of spinning.
                usleep(10_000)
                continue
            }
            if descriptors[0].revents != 0 {
                var sink = [UInt8](repeating: 0, count: 256)
                while read(wakeReader, &sink, sink.count) == sink.count {}
            }
            state.withLock { state in
                if ready > 0 {
                    for index in 2..<descriptors.count where descriptors[index].revents != 0 {
                        service(ids[index - 2], events: descriptors[index].revents, in: &state, scratch: &scratch)
                    }
                }
                reap(&state)
                if descriptors[1].revents != 0 { acceptConnections(&state) }
            }
        }
        shutDown()
    }

    /// Handles poll results for one connection: reads requests, writes output, notices a vanished peer.
    private func service(_ id: UInt64, events: Int16, in state: inout ServerState, scratch: inout [UInt8]) {
        guard state.connections[id] != nil else { return }
        if events & Int16(POLLERR | POLLNVAL) != 0 {
            state.connections[id]?.closeNow = true
            return
        }
        if events & Int16(POLLIN) != 0 {
            readRequests(id, in: &state, scratch: &scratch)
        }
        if events & Int16(POLLHUP) != 0 {
            // Both directions are shut: nobody can read a reply any more.
            state.connections[id]?.closeNow = true
            return
        }
        if events & Int16(POLLOUT) != 0 {
            state.connections[id]?.flush(stallTimeout: configuration.stallTimeout)
            // Output that drained makes room for the requests held back.
            let overTotal = state.outputOverTotal(configuration)
            state.connections[id]?.handOverLines(configuration, overTotal: overTotal)
        }
    }

    /// Reads what the socket has (a bounded amount per turn, for fairness) and hands complete lines to the task.
    private func readRequests(_ id: UInt64, in state: inout ServerState, scratch: inout [UInt8]) {
        for _ in 0..<4 {
            let overTotal = state.outputOverTotal(configuration)
            guard let connection = state.connections[id], connection.wantsInput(configuration, overTotal: overTotal) else { return }
            switch scratch.withUnsafeMutableBytes({ UnixSocket.receive(connection.fd, $0) }) {
            case .success(0):
                // The client shut its sending side: answer what it asked, then (unless watching) close.
                state.connections[id]?.peerFinishedSending = true
                state.connections[id]?.handOverLines(configuration, overTotal: overTotal)
                return
            case .success(let count):
                state.connections[id]?.takeInput(scratch[0..<count], configuration, overTotal: overTotal)
            case .failure(let failure) where failure.wouldBlock:
                return
            case .failure:
                state.connections[id]?.closeNow = true
                return
            }
        }
    }

    /// Closes connections that failed, were asked to close and have drained, or stalled past their deadline.
    private func reap(_ state: inout ServerState) {
        let now = ContinuousClock.now
        // A deadline that passed is checked by writing first. Poll reports a Unix socket writable only once its
        // reader has drained it to a quarter, so a watcher that reads steadily but stays behind by more than
        // that gets no POLLOUT, and the loop may have been starved of CPU past the deadline: either way, only
        // a socket that still takes nothing now has a reader that stopped.
        for (id, connection) in state.connections where !connection.closeNow {
            if let deadline = connection.stallDeadline, deadline <= now {
                state.connections[id]?.flush(stallTimeout: configuration.stallTimeout)
            }
        }
        let doomed = state.connections.filter { _, connection in
            connection.closeNow || (connection.closeWhenFlushed && connection.output.isEmpty)
                || (connection.stallDeadline.map { $0 <= now } ?? false)
        }
        for (id, connection) in doomed {
            connection.requests.finish()
            connection.task?.cancel()
            close(connection.fd)
            if connection.isWatcher { state.watcherCount -= 1 }
            state.connections[id] = nil
            if let onClose {
                let closed = ControlConnection(id: id, core: self)
                // Not under the lock, which the callback may want (to send to other connections).
                Task { onClose(closed) }
            }
        }
    }

    /// Accepts pending connections; beyond the limit, or out of descriptors, refuses them with one error line.
    private func acceptConnections(_ state: inout ServerState) {
        for _ in 0..<64 {
            let fd = accept(listener, nil, nil)
            if fd >= 0 {
                UnixSocket.setNonBlocking(fd)
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            }
            if fd < 0 {
                switch errno {
                case EINTR, ECONNABORTED: continue
                case EAGAIN, EWOULDBLOCK:
                    return
                case EMFILE, ENFILE:
                    refuseWithReserve(&state)
                    return
                default:
                    // Out of memory or buffers: the pending connection stays queued; try again shortly.
                    state.acceptPausedUntil = .now + .milliseconds(100)
                    return
                }
            }
            let uid = UnixSocket.peerUID(fd) ?? .max
            // One user may not take every connection: beyond their share they must close one of their own,
            // and the last few places are root's, so that an administrator can always get in.
            if uid != 0 {
                let mine = state.connections.values.lazy.filter { $0.peerUID == uid }.count
                if mine >= configuration.maxConnectionsPerUser, !evictIdleConnection(&state, of: uid) {
                    refuse(
                        fd, .tooManyConnections,
                        "this user already has \(mine) connections to the daemon, all busy (at most \(configuration.maxConnectionsPerUser) per user); close one")
                    continue
                }
            }
            let rootOnly = min(8, configuration.maxConnections / 8)
            let limit = uid == 0 ? configuration.maxConnections : configuration.maxConnections - rootOnly
            if state.connections.count >= limit, !evictIdleConnection(&state) {
                refuse(fd, .tooManyConnections, "the daemon already serves \(state.connections.count) connections, all busy")
                continue
            }
            register(fd, uid: uid, in: &state)
        }
    }

    /// Makes room for a new client by closing one idle connection (no request in flight, not watching): the
    /// oldest of the user who holds the most connections (or of `uid`, when given), so that one user's idle
    /// crowd cannot lock others out. Returns whether one was closed.
    private func evictIdleConnection(_ state: inout ServerState, of uid: UInt32? = nil) -> Bool {
        var perUser: [UInt32: Int] = [:]
        for connection in state.connections.values { perUser[connection.peerUID, default: 0] += 1 }
        let victim = state.connections.filter { $0.value.isIdle && (uid == nil || $0.value.peerUID == uid) }
            .max { lhs, rhs in
                let (left, right) = (perUser[lhs.value.peerUID] ?? 0, perUser[rhs.value.peerUID] ?? 0)
                return left != right ? left < right : lhs.key > rhs.key  // more connections first, then the oldest
            }
        guard let (id, connection) = victim else { return false }
        refuse(connection.fd, .tooManyConnections, "closed to make room for a new client: this connection was idle")
        connection.requests.finish()
        connection.task?.cancel()
        state.connections[id] = nil
        return true
    }

    /// Writes one failure line to a fresh connection (it always fits an empty socket buffer) and closes it.
    private func refuse(_ fd: Int32, _ code: ControlError.Code, _ message: String) {
        let line = JSONText.failureLine(code: code.rawValue, message: message)
        _ = line.withUnsafeBytes { UnixSocket.send(fd, $0) }
        close(fd)
    }

    /// Frees the spare descriptor to accept and refuse one connection, so the listener does not stay readable
    /// for ever while the process is out of descriptors.
    private func refuseWithReserve(_ state: inout ServerState) {
        guard state.reserveFD >= 0 else {
            state.acceptPausedUntil = .now + .milliseconds(100)
            return
        }
        close(state.reserveFD)
        let fd = accept(listener, nil, nil)
        if fd >= 0 { refuse(fd, .tooManyConnections, "the daemon is out of file descriptors") }
        state.reserveFD = open("/dev/null", O_RDONLY | O_CLOEXEC)
    }

    /// Adds an accepted connection and starts the task that answers its requests in order.
    private func register(_ fd: Int32, uid: UInt32, in state: inout ServerState) {
        let id = state.nextID
        state.nextID += 1
        let (stream, continuation) = AsyncStream.makeStream(
            of: ConnectionInput.self, bufferingPolicy: .unbounded)
        let connection = ControlConnection(id: id, core: self)
        let task = Task { [self] in
            await answer(stream, on: connection)
        }
        var entry = ConnectionState(fd: fd, requests: continuation)
        entry.task = task
        entry.peerUID = uid
        state.connections[id] = entry
    }

    // MARK: - Requests

    /// Answers a connection's requests one at a time, in the order they arrived.
    private func answer(_ requests: AsyncStream<ConnectionInput>, on connection: ControlConnection) async {
        for await input in requests {
            switch input {
            case .line(let line):
                let reply: ControlReply
                var watching = false
                do {
                    let request = try ControlRequest(line: line)
                    reply = await handler(request, connection)
                    if case .watch = request { watching = reply.isSuccess }
                } catch {
                    reply = .failure(error)
                }
                deliver(reply, to: connection.id, watching: watching, thenClose: false)
            case .tooLarge:
                let reply = ControlReply.failure(
                    .requestTooLarge,
                    "request line exceeds \(configuration.maxRequestLength) bytes; closing the connection")
                deliver(reply, to: connection.id, watching: false, thenClose: true)
            }
        }
        // Input ended (the client shut its side, or the connection closed): a non-watcher is done.
        let id = connection.id
        state.withLock { state in
            guard let entry = state.connections[id], !entry.isWatcher else { return }
            state.connections[id]?.closeWhenFlushed = true
            wake(state)
        }
    }

    /// Queues a reply (and, for `watch`, the watcher's first lines) and writes what the socket takes.
    private func deliver(_ reply: ControlReply, to id: UInt64, watching: Bool, thenClose: Bool) {
        state.withLock { state in
            guard state.connections[id] != nil else { return }
            state.connections[id]?.pendingRequests -= 1
            state.connections[id]?.output.append(reply.line)
            if watching, state.connections[id]?.isWatcher == false {
                state.connections[id]?.isWatcher = true
                state.watcherCount += 1
                for line in reply.followUp {
                    _ = state.connections[id]?.enqueueEvent(Self.terminated(line), limit: configuration.maxOutputBuffer)
                }
                if let batch = reply.heldBatch {
                    _ = state.connections[id]?.enqueueEvent(
                        Self.terminated(batch.lines), limit: configuration.maxOutputBuffer, heldFixes: max(1, batch.count))
                }
            }
            if thenClose { state.connections[id]?.closeWhenFlushed = true }
            state.connections[id]?.flush(stallTimeout: configuration.stallTimeout)
            // A request answered and output written make room for the requests held back.
            let overTotal = state.outputOverTotal(configuration)
            state.connections[id]?.handOverLines(configuration, overTotal: overTotal)
            // The loop may need to poll for output, resume reading, or close: let it look again.
            wake(state)
        }
    }

    // MARK: - Pushing events

    /// Queues an event line to one connection; returns whether it was queued rather than counted as missed.
    func send(_ line: [UInt8], to id: UInt64) -> Bool {
        let line = Self.terminated(line)
        return state.withLock { state in
            guard !state.stopped, state.connections[id] != nil else { return false }
            return push(line, to: id, limit: configuration.maxOutputBuffer, in: &state)
        }
    }

    /// Queues an event line to every watcher; returns how many queued it.
    func broadcast(_ line: [UInt8], to only: Set<UInt64>?, heldFixes: Int = 0) -> Int {
        let line = Self.terminated(line)
        return state.withLock { state in
            guard !state.stopped, state.watcherCount > 0 else { return 0 }
            var total = 0
            for connection in state.connections.values { total += connection.output.count }
            let overTotal = total >= configuration.maxTotalOutputBuffer
            var queued = 0
            for (id, connection) in state.connections where connection.isWatcher && only?.contains(id) != false {
                // Over the total, a slow watcher (output already waiting) misses this line, counted.
                let limit = overTotal && !connection.output.isEmpty ? 0 : configuration.maxOutputBuffer
                if push(line, to: id, limit: limit, heldFixes: heldFixes, in: &state) { queued += 1 }
            }
            return queued
        }
    }

    /// Queues and writes at once; wakes the loop only when output is left over for it to poll.
    private func push(
        _ line: [UInt8], to id: UInt64, limit: Int, heldFixes: Int = 0, in state: inout ServerState
    ) -> Bool {
        let wasEmpty = state.connections[id]?.output.isEmpty ?? false
        guard state.connections[id]?.enqueueEvent(line, limit: limit, heldFixes: heldFixes) == true else {
            return false
        }
        if wasEmpty {
            state.connections[id]?.flush(stallTimeout: configuration.stallTimeout)
            if let connection = state.connections[id], !connection.output.isEmpty || connection.closeNow {
                wake(state)
            }
        }
        return true
    }

    /// Asks the loop to close a connection once its queued output is written.
    func closeConnection(_ id: UInt64) {
        state.withLock { state in
            guard state.connections[id] != nil else { return }
            state.connections[id]?.inputClosed = true
            state.connections[id]?.closeWhenFlushed = true
            wake(state)
        }
    }

    /// `line` with a `\n` at the end if it lacks one.
    static func terminated(_ line: [UInt8]) -> [UInt8] {
        line.last == UInt8(ascii: "\n") ? line : line + [UInt8(ascii: "\n")]
    }
}

extension ConnectionState {
    /// Takes received bytes and hands the complete request lines among them to the task.
    mutating func takeInput(_ bytes: ArraySlice<UInt8>, _ configuration: ControlServerConfiguration, overTotal: Bool) {
        guard !inputClosed else { return }
        input.append(contentsOf: bytes)
        handOverLines(configuration, overTotal: overTotal)
    }

    /// Hands held request lines to the task while fewer than `maxPendingRequests` are unanswered and the
    /// output is under `maxOutputBuffer` (with `overTotal`, one at a time and only with nothing waiting), so
    /// that a client that pipelines without reading is held back by its socket, not answered into memory.
    /// An over-long line ends input; when the client has finished sending and every line is handed over,
    /// input ends.
    mutating func handOverLines(_ configuration: ControlServerConfiguration, overTotal: Bool) {
        let limit = configuration.maxRequestLength
        var start = 0
        while !inputClosed, mayHandOver(configuration, overTotal: overTotal),
            let newline = input[start...].firstIndex(of: UInt8(ascii: "\n"))
        {
            let line = Array(input[start..<newline])
            start = newline + 1
            guard line.count <= limit else {
                rejectOversized()
                return
            }
            // Blank lines (a stray Enter in an interactive client) are not requests.
            if line.contains(where: { $0 != 0x20 && $0 != 0x0D && $0 != 0x09 }) {
                pendingRequests += 1
                requests.yield(.line(line))
            }
        }
        guard !inputClosed else { return }
        input.removeFirst(start)
        let holdsLine = input.contains(UInt8(ascii: "\n"))
        if !holdsLine, input.count > limit {
            rejectOversized()
        } else if !holdsLine, peerFinishedSending, mayHandOver(configuration, overTotal: overTotal) {
            // A client that shut its sending side has said all it will: a last request without its
            // newline is still a request.
            if input.contains(where: { $0 != 0x20 && $0 != 0x0D && $0 != 0x09 }) {
                pendingRequests += 1
                requests.yield(.line(input))
            }
            input.removeAll()
            inputClosed = true
            requests.finish()
        }
    }

    private mutating func rejectOversized() {
        input = []
        inputClosed = true
        pendingRequests += 1
        requests.yield(.tooLarge)
        requests.finish()
    }
}
