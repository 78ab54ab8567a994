import Foundation
import LocationCore
import LocationDevSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Reads gpsd JSON lines from a file descriptor on its own thread and records, for each fix time, when the
/// first and the last TPV carrying it arrived (monotonic nanoseconds). Used for a raw socket client of gpsd and for the
/// standard output of `gpspipe -w`.
package final class TPVArrivalRecorder: Sendable {
    /// First arrival of each fix time, keyed by the fix time in milliseconds since 1970.
    package let arrivals = Locked<[Int64: UInt64]>([:])
    /// Last arrival of each fix time (the TPV that completed the epoch), keyed as ``arrivals``.
    package let lastArrivals = Locked<[Int64: UInt64]>([:])
    /// How many TPV lines with a time were read.
    package let reports = Locked(0)
    private let finished = DispatchSemaphore(value: 0)
    private let fd: Int32

    /// Starts reading `fd` until end of file or an error; the recorder closes `fd` when it is done.
    package init(fd: Int32) {
        self.fd = fd
        let thread = Thread { [self] in
            self.readLines()
            self.finished.signal()
        }
        thread.start()
    }

    /// Waits for the reader to reach the end of its input (the caller ends the input first).
    package func wait() {
        finished.wait()
    }

    /// The fix time of a Date, as the key of ``arrivals``.
    package static func key(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    private func readLines() {
        defer { close(fd) }
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(fd, &chunk, chunk.count)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return }
            let now = FeedServer.monotonicNanoseconds()
            pending.append(contentsOf: chunk[0..<count])
            while let newline = pending.firstIndex(of: 0x0A) {
                let line = pending[..<newline]
                if let time = Self.tpvTime(line) {
                    let key = Self.key(time)
                    arrivals.withLock { if $0[key] == nil { $0[key] = now } }
                    lastArrivals.withLock { $0[key] = now }
                    reports.withLock { $0 += 1 }
                }
                pending.removeSubrange(...newline)
            }
        }
    }

    /// The `time` of a TPV line, or nil for any other line.
    private static func tpvTime(_ line: ArraySlice<UInt8>) -> Date? {
        let text = String(decoding: line, as: UTF8.self)
        guard text.contains(#""class":"TPV""#), let start = text.range(of: #""time":""#) else { return nil }
        guard let end = text[start.upperBound...].firstIndex(of: "\"") else { return nil }
        return TimestampProbe.date(parsing: String(text[start.upperBound..<end]))
    }
}
