import Foundation
import GPSDTestSupport
import LocationCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A loopback TCP server that plays a script to every client: a stand-in for a broken gpsd.
final class FakeGPSDServer: Sendable {
    /// One part of a script.
    enum Step: Sendable {
        /// These bytes, as they are.
        case bytes([UInt8])
        /// This text, as UTF-8.
        case text(String)
        /// `count` copies of one byte, written in 64 KiB pieces (a huge line without holding it in memory).
        case filler(UInt8, count: Int)
        /// `count` lines made by `line(index)` (newline added), paced at `perSecond`; made as they are
        /// sent, so the server holds no more than a few of them.
        case flood(count: Int, perSecond: Int, line: @Sendable (Int) -> String)
        /// Nothing for this long.
        case pause(Duration)
    }

    /// What the server does after sending its script to one client.
    enum Ending: Sendable {
        /// Close the connection at once.
        case close
        /// Keep the connection open (reading and discarding) until the server stops.
        case stayOpen
    }

    let port: Int
    private let listener: Int32
    private let running = Atomic<Bool>(true)
    private let finished = Atomic<Bool>(false)
    /// How many clients connected.
    let connections = Atomic<Int>(0)
    /// When each client connected.
    let connectionTimes = Locked<[ContinuousClock.Instant]>([])
    /// How long the last flood took to send, in nanoseconds (0 until one has been sent).
    let floodNanoseconds = Atomic<Int>(0)

    /// Starts listening on a free loopback port and serving `script` to each client.
    convenience init(script: [UInt8], ending: Ending) throws {
        try self.init(steps: [.bytes(script)], ending: ending)
    }

    /// Starts listening on a free loopback port and playing `steps` to each client.
    init(steps: [Step], ending: Ending) throws {
        let (listener, port) = try LoopbackTCP.listen(backlog: 16)
        self.listener = listener
        self.port = port
        let thread = Thread { [self] in self.serve(steps, ending) }
        thread.start()
    }

    /// Stops serving and closes every socket.
    func stop() {
        running.store(false, ordering: .sequentiallyConsistent)
        // The serving thread notices within one poll interval and closes the listener itself.
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(5)
        while clock.now < deadline, !finished.load(ordering: .sequentiallyConsistent) { usleep(5_000) }
    }

    private func serve(_ steps: [Step], _ ending: Ending) {
        var clients: [Int32] = []
        defer {
            clients.forEach { close($0) }
            close(listener)
            finished.store(true, ordering: .sequentiallyConsistent)
        }
        while running.load(ordering: .sequentiallyConsistent) {
            var fds = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
            fds += clients.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            guard poll(&fds, nfds_t(fds.count), 20) > 0 else { continue }
            if fds[0].revents != 0 {
                let client = accept(listener, nil, nil)
                if client >= 0 {
                    connections.add(1, ordering: .relaxed)
                    connectionTimes.withLock { $0.append(.now) }
                    // A send blocked on a client that stopped reading wakes up to notice stop().
                    var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
                    setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                    play(steps, to: client)
                    switch ending {
                    case .close: closeGracefully(client)
                    case .stayOpen: clients.append(client)
                    }
                }
            }
            var buffer = [UInt8](repeating: 0, count: 4096)
            for (index, fd) in fds.enumerated().dropFirst() where fd.revents != 0 {
                if recv(fd.fd, &buffer, buffer.count, 0) <= 0 {
                    let closing = clients[index - 1]
                    close(closing)
                    clients.removeAll { $0 == closing }
                    break
                }
            }
        }
    }

    private var isRunning: Bool { running.load(ordering: .sequentiallyConsistent) }

    /// Plays the steps to one client; gives up when the client goes away or the server stops.
    private func play(_ steps: [Step], to client: Int32) {
        let clock = ContinuousClock()
        for step in steps {
            guard isRunning else { return }
            switch step {
            case .bytes(let bytes):
                guard send(bytes, to: client) else { return }
            case .text(let text):
                guard send(Array(text.utf8), to: client) else { return }
            case .filler(let byte, let count):
                let piece = [UInt8](repeating: byte, count: 65_536)
                var left = count
                while left > 0 {
                    guard isRunning, send(Array(piece.prefix(left)), to: client) else { return }
                    left -= min(left, piece.count)
                }
            case .flood(let count, let perSecond, let line):
                // Sent in batches every 10 ms: steady enough, and sleeps long enough to be kept.
                let perBatch = max(1, perSecond / 100)
                let start = clock.now
                var index = 0
                while index < count {
                    guard isRunning else { return }
                    var batch: [UInt8] = []
                    for _ in 0..<min(perBatch, count - index) {
                        batch += Array(line(index).utf8)
                        batch.append(0x0A)
                        index += 1
                    }
                    guard send(batch, to: client) else { return }
                    let due = start + .seconds(Double(index) / Double(perSecond))
                    if due > clock.now { Thread.sleep(forTimeInterval: clock.now.duration(to: due).seconds) }
                }
                let took = start.duration(to: clock.now)
                floodNanoseconds.store(
                    Int(took.components.seconds) * 1_000_000_000 + Int(took.components.attoseconds / 1_000_000_000),
                    ordering: .sequentiallyConsistent)
            case .pause(let duration):
                let end = clock.now + duration
                while isRunning, clock.now < end { usleep(10_000) }
            }
        }
    }

    /// Closes with a FIN, never a reset: reads what the client sent (its WATCH) until it closes too, for
    /// at most half a second; closing with unread data would reset the connection instead.
    private func closeGracefully(_ client: Int32) {
        shutdown(client, Int32(SHUT_WR))
        var buffer = [UInt8](repeating: 0, count: 4096)
        var fds = [pollfd(fd: client, events: Int16(POLLIN), revents: 0)]
        let clock = ContinuousClock()
        let deadline = clock.now + .milliseconds(500)
        while isRunning, clock.now < deadline, poll(&fds, 1, 50) >= 0 {
            if fds[0].revents != 0, recv(client, &buffer, buffer.count, 0) <= 0 { break }
        }
        close(client)
    }

    /// Sends all of `bytes`; false when the client is gone.
    private func send(_ bytes: [UInt8], to client: Int32) -> Bool {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let sent = Glibc.send(client, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                if sent < 0, errno == EINTR || ((errno == EAGAIN || errno == EWOULDBLOCK) && isRunning) { continue }
                if sent <= 0 { return false }
                offset += sent
            }
            return true
        }
    }
}
