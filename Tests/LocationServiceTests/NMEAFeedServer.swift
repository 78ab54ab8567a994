import Foundation
import GPSDTestSupport
import Synchronization

/// A receiver that never stops: a loopback TCP server sending a 10 Hz NMEA stream (GGA then RMC per
/// epoch) to every connected client, for gpsd to read as its device (`tcp://127.0.0.1:PORT`).
///
/// Epoch `n` is due `n` tenths of a second after the server started, whether or not anyone listens, and
/// its fix time is 2024-05-01T06:00:00Z plus `n` tenths: however often gpsd is restarted, the fix times
/// it reports keep increasing, as a real receiver's would, so order and duplicates can be checked.
final class NMEAFeedServer: Sendable {
    /// Epochs per second.
    static let rate = 10
    /// The fix time of epoch 0, seconds since 1970.
    static let baseSeconds = 1_714_543_200

    let port: Int
    private let listener: Int32
    private let running = Atomic<Bool>(true)
    private let finished = Atomic<Bool>(false)

    init() throws {
        (listener, port) = try LoopbackTCP.listen(backlog: 8)
        let thread = Thread { [self] in self.serve() }
        thread.start()
    }

    deinit { stop() }

    /// Stops sending and closes every socket.
    func stop() {
        running.store(false, ordering: .sequentiallyConsistent)
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, !finished.load(ordering: .sequentiallyConsistent) { usleep(5_000) }
    }

    /// The fix time of an epoch, as a `Date`.
    static func time(ofEpoch epoch: Int) -> Date {
        Date(timeIntervalSince1970: Double(baseSeconds) + Double(epoch) / Double(rate))
    }

    private func serve() {
        var clients: [Int32] = []
        defer {
            clients.forEach { close($0) }
            close(listener)
            finished.store(true, ordering: .sequentiallyConsistent)
        }
        let clock = ContinuousClock()
        let start = clock.now
        var epoch = 0
        while running.load(ordering: .sequentiallyConsistent) {
            let due = start + .milliseconds(epoch * 1000 / Self.rate)
            // Accept newcomers while waiting for the next epoch.
            var fds = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
            let wait = Int32(max(0, (clock.now.duration(to: due) / .milliseconds(1)).rounded(.up)))
            if poll(&fds, 1, wait) > 0 {
                let client = accept(listener, nil, nil)
                if client >= 0 {
                    var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
                    setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                    clients.append(client)
                }
            }
            guard clock.now >= due else { continue }
            let bytes = Array(Self.sentences(epoch: epoch).utf8)
            clients.removeAll { client in
                let sent = bytes.withUnsafeBytes { send(client, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
                if sent == bytes.count { return false }
                close(client)
                return true
            }
            epoch += 1
        }
    }

    /// GGA and RMC for one epoch, walking north-west from 51.5 N 0.1 W.
    static func sentences(epoch: Int) -> String {
        let (gga, rmc) = NMEASentences.ggaAndRMC(epoch: epoch, rateHz: rate, baseSeconds: baseSeconds)
        return gga + "\r\n" + rmc + "\r\n"
    }
}

/// An error a test helper throws.
struct LocationServiceTestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
