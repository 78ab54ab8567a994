import Foundation
import LocationCore
import LocationTesting

// Measures the suspended-batching figures quoted in the README. Run in release mode:
//   swift run -c release location-bench [--runs N]
// Inputs are generated deterministically (LocationFixtures.walk); medians of N runs are printed.

let arguments = CommandLine.arguments.dropFirst()
if arguments.contains("--help") || arguments.contains("-h") {
    print(
        """
        usage: location-bench [--runs N]

        Measures, in this process: memory per held fix for a 1,000,000-fix batch, time to flush a
        100,000-fix batch to a delegate through LocationManager, and the journal append rate.
        Build with -c release; debug builds are many times slower.
        """)
    exit(0)
}
var runs = 5
if let index = arguments.firstIndex(of: "--runs"), arguments.index(after: index) < arguments.endIndex,
    let value = Int(arguments[arguments.index(after: index)]), value > 0
{
    runs = value
} else if arguments.contains("--runs") {
    FileHandle.standardError.write(Data("location-bench: --runs needs a positive whole number\n".utf8))
    exit(64)
}

func residentBytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        let kilobytes = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return kilobytes * 1024
    }
    return 0
}

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    try body()
    return (clock.now - start).seconds
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

final class NoOpDelegate: LocationManagerDelegate {
    let received = Locked(0)
    func locationManager(_ manager: LocationManager, didUpdateLocations locations: [Location]) {
        received.withLock { $0 += locations.count }
    }
}

let directory = NSTemporaryDirectory() + "location-bench-\(getpid())"
try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: directory) }

// 1. Memory per held fix.
var encodedPerFix: [Double] = []
var residentPerFix: [Double] = []
for _ in 0..<runs {
    let before = residentBytes()
    var batch = LocationBatch(capacity: 1_000_000)
    for index in 0..<1_000_000 { batch.append(LocationFixtures.walk(index)) }
    let after = residentBytes()
    encodedPerFix.append(Double(batch.encodedBytes) / Double(batch.count))
    residentPerFix.append(Double(after - before) / Double(batch.count))
    withExtendedLifetime(batch) {}
}
let arrayStride = MemoryLayout<Location>.stride

// 2. Flush of a 100,000-fix batch to a delegate, through the manager and the lifecycle.
var flushTimes: [Double] = []
let journalPath = directory + "/flush.journal"
for _ in 0..<runs {
    try? FileManager.default.removeItem(atPath: journalPath)
    do {
        let (journal, _) = try LocationJournal.open(path: journalPath)
        try journal.append(contentsOf: LocationFixtures.walk(count: 100_000))
        journal.close()
    }
    let application = Application()
    try application.transition(to: .suspended)
    let manager = try LocationManager(
        source: ScriptedLocationSource(), application: application,
        configuration: .init(journalPath: journalPath))
    let delegate = NoOpDelegate()
    manager.delegate = delegate
    precondition(manager.heldCount == 100_000)
    flushTimes.append(try seconds { try application.enterForeground() })
    precondition(delegate.received.value == 100_000, "flush delivered \(delegate.received.value)")
}

// 3. Journal append rate: one write per fix, fsync at most once a second.
var appendRates: [Double] = []
let appendPath = directory + "/append.journal"
let appendCount = 500_000
let fixes = LocationFixtures.walk(count: appendCount)
for _ in 0..<runs {
    try? FileManager.default.removeItem(atPath: appendPath)
    let (journal, _) = try LocationJournal.open(path: appendPath)
    let elapsed = try seconds { for fix in fixes { try journal.append(fix) } }
    journal.close()
    appendRates.append(Double(appendCount) / elapsed)
}

func format(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }
print("location-bench: medians of \(runs) runs (release build expected)")
print("| figure | measured | goal |")
print("|---|---:|---:|")
print("| held batch, 1,000,000 fixes: encoded bytes per fix | \(format(median(encodedPerFix))) B | ≤ 96 B |")
print("| held batch, 1,000,000 fixes: resident memory growth per fix | \(format(median(residentPerFix))) B | ≤ 96 B |")
print("| (for scale) one `Location` in a Swift array | \(arrayStride) B | |")
print("| flush of a 100,000-fix batch to a delegate | \(format(median(flushTimes) * 1000)) ms | ≤ 50 ms |")
print("| journal append, one write per fix | \(format(median(appendRates) / 1000, 0)) k fixes/s | ≥ 200 k fixes/s |")
