// locationbench gpx: how fast LocationGPX reads a large GPX file, next to gpxpy and gpsbabel.
//
//   swift run -c release locationbench gpx [--points N] [--seed S] [--runs R] [--keep] [--readers LIST]
//
// Writes a GPX 1.1 file of N track points (default 1,000,000) with <ele> and <time>, from a fixed seed,
// into a temporary directory; then reads it R times (default 3) with each reader in a child process and
// reports the median points/s (wall time of the whole child process, start-up included) and the child's
// peak RSS. Readers that are not installed are reported as such. The measuring code is in
// LocationBenchmarks, shared with the default figures of locationbench.
import Foundation
import LocationBenchmarks

// Child mode: `--read READER FILE` reads a file and prints the number of points.

/// `locationbench gpx`.
enum GPXCommand {
    static func run(_ commandArguments: [String]) async throws {

        var pointCount = 1_000_000
        var seed = GPXBenchFile.defaultSeed
        var runs = 3
        var keep = false
        var readers: [GPXParseBenchmark.Reader] = [.locationGPX, .gpxpy, .gpsbabel]
        var arguments = commandArguments[...]
        func usage() -> Never {
            let names = GPXParseBenchmark.Reader.allCases.map(\.rawValue).joined(separator: ",")
            FileHandle.standardError.write(Data("usage: locationbench gpx [--points N] [--seed S] [--runs R] [--keep] [--readers \(names)]\n".utf8))
            exit(64)
        }
        while let argument = arguments.popFirst() {
            switch argument {
            case "--points": pointCount = arguments.popFirst().flatMap { Int($0) } ?? pointCount
            case "--seed": seed = arguments.popFirst().flatMap { UInt64($0) } ?? seed
            case "--runs": runs = max(1, arguments.popFirst().flatMap { Int($0) } ?? runs)
            case "--keep": keep = true
            case "--readers":
                let names = (arguments.popFirst() ?? "").lowercased().split(separator: ",").map(String.init)
                readers = names.compactMap(GPXParseBenchmark.Reader.init(rawValue:))
                if readers.count != names.count { usage() }
            default: usage()
            }
        }

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("locationbench-gpx-\(getpid())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let file = "\(directory)/bench-\(pointCount)-\(seed).gpx"
        let generationStart = ContinuousClock.now
        let size = try GPXBenchFile.generate(path: file, points: pointCount, seed: seed)
        let generationTime = generationStart.duration(to: .now)
        print(
            "generated \(file): \(pointCount) trkpt with ele + time, \(size / 1_000_000) MB, seed \(seed), "
                + "in \(String(format: "%.1f", Double(generationTime.components.seconds) + Double(generationTime.components.attoseconds) * 1e-18)) s")

        GPXParseBenchmark.warm(file)
        if let floor = try? ProcessMeasurement.run(["/bin/true"]) {
            print("peak RSS measured with \(ProcessMeasurement.rssMethod); /bin/true measures \(floor.peakRSSKiB) KiB")
        }

        let benchmark = GPXParseBenchmark(points: pointCount, runs: runs)
        print()
        print("| reader | points/s | peak RSS | notes |")
        print("|---|---:|---:|---|")
        for reader in readers {
            let row = benchmark.measure(reader, file: file)
            let rate = row.pointsPerSecond.map { String(format: "%.2f M", $0 / 1e6) } ?? "–"
            let rss = row.peakRSSMiB.map { String(format: "%.0f MiB", $0) } ?? "–"
            var note = row.seconds.map { String(format: "median of %d, %.2f s", runs, $0) } ?? ""
            if let extra = row.note { note += note.isEmpty ? extra : "; \(extra)" }
            print("| \(row.name) | \(rate) | \(rss) | \(note) |")
        }

        if keep {
            print("\nkept \(file)")
        } else {
            try? FileManager.default.removeItem(atPath: directory)
        }
    }
}
