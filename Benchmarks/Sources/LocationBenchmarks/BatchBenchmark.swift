import Foundation
import LocationCore
import LocationDevSupport
import LocationTesting

/// The suspended-batching figures: memory per held fix, flush time of a held batch through the manager,
/// and the journal's append rate. Inputs are `LocationFixtures.walk`; every figure is a median of `runs`.
package struct BatchBenchmark: Sendable {
    /// The medians.
    package struct Result: Sendable {
        /// Fixes in the held batch measured for memory.
        package var heldFixes: Int
        /// Encoded bytes per held fix.
        package var encodedBytesPerFix: Double
        /// Resident memory growth per held fix.
        package var residentBytesPerFix: Double
        /// Fixes in the flushed batch.
        package var flushedFixes: Int
        /// Seconds to flush them to a delegate.
        package var flushSeconds: Double
        /// Fixes appended to the journal per second, one write each.
        package var journalAppendsPerSecond: Double
        /// Seconds to write the flushed batch's line, and to read it back, as JSON locations and as records.
        package var lineSeconds: (json: (write: Double, read: Double), records: (write: Double, read: Double))
        /// Bytes of the batch's line as JSON locations and as records.
        package var lineBytes: (json: Int, records: Int)
    }

    package var heldFixes: Int
    package var flushedFixes: Int
    package var appendedFixes: Int
    package var runs: Int

    package init(heldFixes: Int = 1_000_000, flushedFixes: Int = 100_000, appendedFixes: Int = 500_000, runs: Int = 5) {
        self.heldFixes = heldFixes
        self.flushedFixes = flushedFixes
        self.appendedFixes = appendedFixes
        self.runs = max(1, runs)
    }

    /// The size of one `Location` in a Swift array, for scale.
    package static var locationStride: Int { MemoryLayout<Location>.stride }

    package func run() throws -> Result {
        let directory = NSTemporaryDirectory() + "location-bench-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        // 1. Memory per held fix.
        var encodedPerFix: [Double] = []
        var residentPerFix: [Double] = []
        for _ in 0..<runs {
            let before = Self.residentBytes()
            var batch = HeldBatchProbe(capacity: heldFixes)
            for index in 0..<heldFixes { batch.append(LocationFixtures.walk(index)) }
            let after = Self.residentBytes()
            encodedPerFix.append(Double(batch.encodedBytes) / Double(batch.count))
            residentPerFix.append(Double(after - before) / Double(batch.count))
            withExtendedLifetime(batch) {}
        }

        // 2. Flush of a held batch to a delegate, through the manager and the lifecycle.
        var flushTimes: [Double] = []
        let journalPath = directory + "/flush.journal"
        for _ in 0..<runs {
            try? FileManager.default.removeItem(atPath: journalPath)
            do {
                let journal = try JournalProbe(path: journalPath)
                try journal.append(contentsOf: LocationFixtures.walk(count: flushedFixes))
                journal.close()
            }
            let application = Application()
            try application.transition(to: .suspended)
            let manager = try LocationManager(
                source: ScriptedLocationSource(), application: application,
                configuration: .init(journalPath: journalPath))
            let delegate = CountingDelegate()
            manager.delegate = delegate
            guard manager.heldCount == flushedFixes else { throw BenchError("held \(manager.heldCount) fixes") }
            let start = ContinuousClock.now
            try application.enterForeground()
            flushTimes.append(start.duration(to: .now).seconds)
            guard delegate.count == flushedFixes else { throw BenchError("flush delivered \(delegate.count)") }
        }

        // 3. Journal append rate: one write per fix, fsync at most once a second.
        var appendRates: [Double] = []
        let appendPath = directory + "/append.journal"
        let fixes = LocationFixtures.walk(count: appendedFixes)
        for _ in 0..<runs {
            try? FileManager.default.removeItem(atPath: appendPath)
            let journal = try JournalProbe(path: appendPath)
            let start = ContinuousClock.now
            for fix in fixes { try journal.append(fix) }
            let elapsed = start.duration(to: .now).seconds
            journal.close()
            appendRates.append(Double(appendedFixes) / elapsed)
        }
        // 4. The flushed batch as a line on locationd's socket: written, and read back as a client reads it.
        let batch = LocationFixtures.walk(count: flushedFixes)
        var times: [[Double]] = [[], [], [], []]
        var bytes = [0, 0]
        for _ in 0..<runs {
            for (slot, records) in [false, true].enumerated() {
                let start = ContinuousClock.now
                var line = HeldBatchLineProbe.line(batch, records: records)
                let written = ContinuousClock.now
                line.removeLast()
                let read = HeldBatchLineProbe.read(line)
                times[2 * slot].append((written - start).seconds)
                times[2 * slot + 1].append(written.duration(to: .now).seconds)
                bytes[slot] = line.count + 1
                guard read == flushedFixes else { throw BenchError("read \(read) of \(flushedFixes) fixes from the \(records ? "records" : "JSON") line") }
            }
        }
        let medians = times.map(Statistics.median)
        return Result(
            heldFixes: heldFixes, encodedBytesPerFix: Statistics.median(encodedPerFix),
            residentBytesPerFix: Statistics.median(residentPerFix), flushedFixes: flushedFixes,
            flushSeconds: Statistics.median(flushTimes), journalAppendsPerSecond: Statistics.median(appendRates),
            lineSeconds: ((medians[0], medians[1]), (medians[2], medians[3])), lineBytes: (bytes[0], bytes[1]))
    }

    private static func residentBytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
            return kilobytes * 1024
        }
        return 0
    }
}
