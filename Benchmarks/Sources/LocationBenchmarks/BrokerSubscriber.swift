import Foundation
import GPSDTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// `mosquitto_sub` at QoS 1 on some topics, with what arrives recorded as it comes: the messages per topic,
/// and for OwnTracks messages the first arrival of each `tst` per topic (monotonic nanoseconds).
///
/// With a `sessionID` it keeps a persistent session (`-c -i`), so a persistent broker queues what is
/// published while it reconnects after a restart; mosquitto_sub reconnects by itself.
package final class BrokerSubscriber: Sendable {
    private let process: ChildProcess
    private let counts = Locked<[String: Int]>([:])
    private let arrivals = Locked<[String: [Int: UInt64]]>([:])

    /// Starts the subscriber; returns once a probe message published after it subscribed has arrived.
    package init(port: Int, topics: [String], sessionID: String? = nil) throws {
        var arguments = ["mosquitto_sub", "-h", "127.0.0.1", "-p", "\(port)", "-q", "1", "-v", "-t", "bench/probe"]
        for topic in topics { arguments += ["-t", topic] }
        if let sessionID { arguments += ["-c", "-i", sessionID] }
        process = try ChildProcess(arguments, captureStandardOutput: true)
        guard let fd = process.standardOutput else { throw BenchError("mosquitto_sub has no output") }
        let probed = Locked(false)
        let counts = counts, arrivals = arrivals
        let reader = Thread {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            var line: [UInt8] = []
            while true {
                let count = read(fd, &buffer, buffer.count)
                guard count > 0 else { return }
                let now = FeedServer.monotonicNanoseconds()
                for byte in buffer[0..<count] {
                    guard byte == 0x0A else {
                        line.append(byte)
                        continue
                    }
                    let space = line.firstIndex(of: 0x20) ?? line.endIndex
                    let topic = String(decoding: line[..<space], as: UTF8.self)
                    if topic == "bench/probe" {
                        probed.withLock { $0 = true }
                    } else {
                        counts.withLock { $0[topic, default: 0] += 1 }
                        if let tst = Self.tst(in: line[space...]) {
                            arrivals.withLock { all in
                                if all[topic]?[tst] == nil { all[topic, default: [:]][tst] = now }
                            }
                        }
                    }
                    line.removeAll(keepingCapacity: true)
                }
            }
        }
        reader.start()
        let deadline = ContinuousClock.now + .seconds(10)
        while !probed.withLock({ $0 }) {
            guard ContinuousClock.now < deadline else { throw BenchError("mosquitto_sub did not subscribe") }
            let probe = try ChildProcess(["mosquitto_pub", "-h", "127.0.0.1", "-p", "\(port)", "-t", "bench/probe", "-m", "x"])
            _ = probe.wait()
            usleep(20_000)
        }
    }

    /// Messages that arrived on `topic` (repeats included).
    package func count(_ topic: String) -> Int { counts.withLock { $0[topic] ?? 0 } }

    /// The first arrival of each `tst` on `topic`.
    package func arrivals(_ topic: String) -> [Int: UInt64] { arrivals.withLock { $0[topic] ?? [:] } }

    /// Stops mosquitto_sub.
    package func stop() { process.stop() }

    /// The integer after `"tst":` in a JSON message, if any.
    private static func tst(in bytes: ArraySlice<UInt8>) -> Int? {
        let key = Array(#""tst":"#.utf8)
        guard bytes.count > key.count else { return nil }
        var index = bytes.startIndex
        while index + key.count <= bytes.endIndex {
            if bytes[index..<(index + key.count)].elementsEqual(key) {
                var value = 0, digits = 0, at = index + key.count
                while at < bytes.endIndex, bytes[at] >= 0x30, bytes[at] <= 0x39, digits < 12 {
                    value = value * 10 + Int(bytes[at] - 0x30)
                    digits += 1
                    at += 1
                }
                return digits > 0 ? value : nil
            }
            index += 1
        }
        return nil
    }
}
