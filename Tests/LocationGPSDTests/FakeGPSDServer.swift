import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A loopback TCP server that plays a script of bytes to every client: a stand-in for a broken gpsd.
final class FakeGPSDServer: Sendable {
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
    private let finished = Mutex<Bool>(false)
    /// How many clients connected.
    let connections = Atomic<Int>(0)

    /// Starts listening on a free loopback port and serving `script` to each client.
    init(script: [UInt8], ending: Ending) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw TestFailure("socket() failed") }
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ready = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listener, pointer, length) == 0 && getsockname(listener, pointer, &length) == 0
            }
        }
        guard ready, listen(listener, 16) == 0 else {
            close(listener)
            throw TestFailure("cannot listen on loopback")
        }
        self.listener = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in self.serve(script, ending) }
        thread.start()
    }

    /// Stops serving and closes every socket.
    func stop() {
        running.store(false, ordering: .sequentiallyConsistent)
        // The serving thread notices within one poll interval and closes the listener itself.
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(5)
        while clock.now < deadline, !finished.withLock({ $0 }) { usleep(5_000) }
    }

    private func serve(_ script: [UInt8], _ ending: Ending) {
        var clients: [Int32] = []
        defer {
            clients.forEach { close($0) }
            close(listener)
            finished.withLock { $0 = true }
        }
        while running.load(ordering: .sequentiallyConsistent) {
            var fds = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
            fds += clients.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            guard poll(&fds, nfds_t(fds.count), 20) > 0 else { continue }
            if fds[0].revents != 0 {
                let client = accept(listener, nil, nil)
                if client >= 0 {
                    connections.add(1, ordering: .relaxed)
                    script.withUnsafeBytes { bytes in
                        var offset = 0
                        while offset < bytes.count {
                            let sent = send(client, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                            if sent <= 0 { break }
                            offset += sent
                        }
                    }
                    switch ending {
                    case .close: close(client)
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
}
