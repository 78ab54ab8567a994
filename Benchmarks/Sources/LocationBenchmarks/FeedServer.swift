import Foundation
import GPSDTestSupport
import LocationCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A minimal gpsd stand-in on loopback: greets each client like gpsd and then sends one TPV per epoch at a
/// fixed rate, recording when each line was written, so the time to the delegate can be measured.
package final class FeedServer: Sendable {
    package let port: Int
    private let listener: Int32
    private let running = Atomic<Bool>(true)
    private let done = Atomic<Bool>(false)
    /// Monotonic write time (nanoseconds) of each epoch's line, indexed by epoch number.
    package let writeTimes = Locked<[Int: UInt64]>([:])
    package let rateHz: Double

    private let firstEpoch: Int

    /// Listens on `port` (0 picks a free one) and sends epochs `firstEpoch`, `firstEpoch + 1`, ...
    package init(port: Int = 0, rateHz: Double, firstEpoch: Int = 0) throws {
        self.rateHz = rateHz
        self.firstEpoch = firstEpoch
        (listener, self.port) = try LoopbackTCP.listen(port: port, backlog: 8)
        let thread = Thread { [self] in self.serve() }
        thread.start()
    }

    /// Stops serving and closes every socket (gpsd going away).
    package func stop() {
        running.store(false, ordering: .sequentiallyConsistent)
        while !done.load(ordering: .sequentiallyConsistent) { usleep(2_000) }
    }

    package static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// The fix time of epoch `n`, so the reader can map a delivered location back to its epoch.
    package static func fixTime(ofEpoch n: Int, rateHz: Double) -> Double {
        1_714_543_200 + Double(n) / rateHz
    }

    private func serve() {
        defer {
            close(listener)
            done.store(true, ordering: .sequentiallyConsistent)
        }
        var clients: [Int32] = []
        defer { clients.forEach { close($0) } }
        let period = UInt64(1e9 / rateHz)
        var next = Self.monotonicNanoseconds()
        var epoch = firstEpoch
        while running.load(ordering: .sequentiallyConsistent) {
            var pfd = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            let now = Self.monotonicNanoseconds()
            let waitMs = next > now ? Int32((next - now) / 1_000_000) : 0
            if poll(&pfd, 1, waitMs) > 0 {
                let client = accept(listener, nil, nil)
                if client >= 0 {
                    let greeting = #"{"class":"VERSION","release":"3.22","rev":"3.22","proto_major":3,"proto_minor":14}"# + "\n"
                    _ = greeting.withCString { send(client, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
                    clients.append(client)
                }
                continue
            }
            // poll's millisecond timeout may wake a little early: wait for the rest without spinning.
            let early = Self.monotonicNanoseconds()
            if early < next {
                var rest = timespec(tv_sec: 0, tv_nsec: Int(next - early))
                nanosleep(&rest, nil)
            }
            next += period
            let time = Self.fixTime(ofEpoch: epoch, rateHz: rateHz)
            let whole = Int(time)
            let millis = Int(((time - Double(whole)) * 1000).rounded())
            var tm = tm()
            var seconds = time_t(whole)
            gmtime_r(&seconds, &tm)
            let stamp = String(
                format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, millis)
            let line = #"{"class":"TPV","device":"/dev/bench","mode":3,"time":"\#(stamp)","lat":51.5,"lon":-0.1,"altHAE":80.0,"altMSL":33.0,"eph":4.0,"epv":6.0,"speed":1.5,"track":90.0}"# + "\n"
            let written = Self.monotonicNanoseconds()
            writeTimes.withLock { $0[epoch] = written }
            clients.removeAll { client in
                line.withCString { send(client, $0, strlen($0), Int32(MSG_NOSIGNAL)) } < 0
            }
            // Drain what clients send (the WATCH) so the kernel never resets the connection.
            var buffer = [UInt8](repeating: 0, count: 1024)
            for client in clients { _ = recv(client, &buffer, buffer.count, Int32(MSG_DONTWAIT)) }
            epoch += 1
        }
    }
}
