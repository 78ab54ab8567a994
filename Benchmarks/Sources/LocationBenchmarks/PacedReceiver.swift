import Foundation
import GPSDTestSupport
import LocationCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A receiver as gpsd sees it on a serial line, and the real gpsd reading it: a loopback TCP server sends
/// an NMEA stream at `rateHz`, each sentence written at the moment its last byte would have arrived at
/// `baud` (10 bits per byte, the epoch starting on the second), so an epoch's sentences are spread over
/// the time the line needs rather than sent all at once; gpsd reads it as `tcp://` device.
///
/// At 1 Hz an epoch is GGA, GSA, three GSV and RMC (a typical NMEA receiver's default set, about 500
/// bytes: half a second at 9600 baud); at 10 Hz GGA and RMC, which need 38400 baud to fit in 100 ms.
package final class PacedReceiver: Sendable {
    /// gpsd's port on 127.0.0.1.
    package let port: Int
    private let feedPort: Int
    private let listener: Int32
    private let running = Atomic<Bool>(true)
    private let finished = Atomic<Bool>(false)
    private let gpsd: ChildProcess
    package let rateHz: Int
    package let baud: Int

    /// Whether gpsd is installed.
    package static var isAvailable: Bool { ExecutableLookup.gpsd != nil }

    /// Starts the feed and a gpsd reading it; returns when gpsd accepts connections.
    package init(rateHz: Int, baud: Int) throws {
        guard let executable = ExecutableLookup.gpsd else { throw BenchError("gpsd is not installed") }
        self.rateHz = rateHz
        self.baud = baud
        (listener, feedPort) = try LoopbackTCP.listen(backlog: 4)
        port = try LoopbackTCP.freePort()
        GPSDSharedMemory.processStarted()
        gpsd = try ChildProcess(
            [executable, "-N", "-n", "-b", "-S", String(port), "tcp://127.0.0.1:\(feedPort)"],
            environment: ["GPSD_SHM_KEY": String(format: "0x%08x", UInt32(bitPattern: GPSDSharedMemory.exportKey(port: port)))])
        GPSDSharedMemory.daemonStarted(gpsd.pid)
        let thread = Thread { [self] in self.serve() }
        thread.start()
        let deadline = Date().addingTimeInterval(20)
        while !(LoopbackTCP.accepts(port: port) && LoopbackTCP.isListening(port: port, pid: gpsd.pid)) {
            guard Date() < deadline, gpsd.reap() == nil else {
                stop()
                throw BenchError("gpsd reading the paced receiver did not accept connections on port \(port)")
            }
            usleep(5_000)
        }
    }

    /// Stops gpsd and the feed.
    package func stop() {
        _ = gpsd.stop(signal: SIGTERM, grace: .seconds(5))
        running.store(false, ordering: .sequentiallyConsistent)
        while !finished.load(ordering: .sequentiallyConsistent) { usleep(2_000) }
        GPSDSharedMemory.processEnded()
    }

    private func serve() {
        var clients: [Int32] = []
        defer {
            clients.forEach { close($0) }
            close(listener)
            finished.store(true, ordering: .sequentiallyConsistent)
        }
        let clock = ContinuousClock()
        let start = clock.now + .milliseconds(200)
        var epoch = 0
        var queue: [(due: ContinuousClock.Instant, bytes: [UInt8])] = []
        while running.load(ordering: .sequentiallyConsistent) {
            if queue.isEmpty {
                let epochStart = start + .milliseconds(epoch * 1000 / rateHz)
                var offset = 0
                for sentence in Self.sentences(epoch: epoch, rateHz: rateHz) {
                    let bytes = Array(sentence.utf8)
                    offset += bytes.count
                    queue.append((epochStart + .microseconds(offset * 10 * 1_000_000 / baud), bytes))
                }
                epoch += 1
            }
            let due = queue[0].due
            var fds = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
            let wait = Int32(max(0, (clock.now.duration(to: due) / .milliseconds(1)).rounded(.down)))
            if poll(&fds, 1, wait) > 0 {
                let client = accept(listener, nil, nil)
                if client >= 0 { clients.append(client) }
                continue
            }
            // The last millisecond is slept precisely, not polled.
            let left = clock.now.duration(to: due)
            if left > .zero { usleep(UInt32(max(0, left / .microseconds(1)))) }
            let bytes = queue.removeFirst().bytes
            clients.removeAll { client in
                let sent = bytes.withUnsafeBytes { send(client, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
                if sent == bytes.count { return false }
                close(client)
                return true
            }
        }
    }

    /// The fix time of an epoch's first second: 2024-05-01T06:00:00Z.
    static let baseSeconds = 1_714_543_200

    /// One epoch's sentences, walking north-west from 51.5 N 0.1 W.
    static func sentences(epoch: Int, rateHz: Int) -> [String] {
        let (gga, rmc) = NMEASentences.ggaAndRMC(epoch: epoch, rateHz: rateHz, baseSeconds: baseSeconds)
        let line = { (text: String) in text + "\r\n" }
        guard rateHz == 1 else { return [line(gga), line(rmc)] }
        let rest = [
            "GPGSA,A,3,02,05,07,09,13,16,20,26,30,,,,1.6,0.9,1.3",
            "GPGSV,3,1,11,02,45,050,42,05,60,120,44,07,30,200,38,09,20,300,35",
            "GPGSV,3,2,11,13,70,010,46,16,15,080,33,20,40,160,40,26,25,240,37",
            "GPGSV,3,3,11,30,55,330,43,29,05,100,,31,08,280,",
        ].map { line(NMEASentences.checksummed($0)) }
        return [line(gga)] + rest + [line(rmc)]
    }
}
