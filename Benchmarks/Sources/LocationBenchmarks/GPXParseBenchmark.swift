import Foundation
import GPSDTestSupport

/// GPX parsing speed and memory, next to its peers: each reader reads the same generated file in its own
/// child process, several times; the median wall time (process start-up included) and the largest peak
/// RSS are reported.
package struct GPXParseBenchmark: Sendable {
    /// A reader of GPX files.
    package enum Reader: String, Sendable, CaseIterable {
        case locationGPX = "locationgpx"
        case gpxpy
        case gpsbabel
        case foundationXML = "foundationxml"
        case libxml2Count = "libxml2-count"
    }

    /// What one reader achieved, or why it was not measured.
    package struct Result: Sendable {
        package var reader: Reader
        /// The name to show, with the version when known.
        package var name: String
        /// Median points per second; nil when not measured.
        package var pointsPerSecond: Double?
        /// Median wall time in seconds; nil when not measured.
        package var seconds: Double?
        /// Largest peak RSS of the runs, MiB; nil when not measured.
        package var peakRSSMiB: Double?
        /// "not installed (...)", a failure, or a remark such as a wrong count.
        package var note: String?
    }

    /// Track points in the file.
    package var points: Int
    /// Runs per reader.
    package var runs: Int
    /// The executable that hosts the child readers (`--read READER FILE`).
    package var childExecutable: String

    package init(points: Int, runs: Int, childExecutable: String = GPXReadChild.executablePath) {
        self.points = points
        self.runs = max(1, runs)
        self.childExecutable = childExecutable
    }

    /// Warms the page cache with `file` so every reader starts from the same place.
    package static func warm(_ file: String) {
        _ = try? ProcessMeasurement.run(["/bin/cat", file], discardOutput: true)
    }

    /// Measures `reader` on `file`, which holds ``points`` track points.
    package func measure(_ reader: Reader, file: String) -> Result {
        let command: [String]?
        var name: String
        var missing = ""
        switch reader {
        case .locationGPX:
            name = "LocationGPX"
            command = [childExecutable, "--read", GPXReadChild.locationGPX.rawValue, file]
        case .foundationXML:
            name = "FoundationXML XMLParser(contentsOf:)"
            command = [childExecutable, "--read", GPXReadChild.foundationXML.rawValue, file]
        case .libxml2Count:
            name = "libxml2 SAX2, count only (floor)"
            command = [childExecutable, "--read", GPXReadChild.libxml2Count.rawValue, file]
        case .gpxpy:
            name = "gpxpy"
            missing = "pip install gpxpy"
            let script =
                "import sys, gpxpy\ng = gpxpy.parse(open(sys.argv[1], encoding='utf-8'))\n"
                + "print(sum(len(s.points) for t in g.tracks for s in t.segments))"
            let python = ExecutableLookup.path(of: "python3")
            let version = python.flatMap { try? ProcessMeasurement.run([$0, "-c", "import gpxpy; print(gpxpy.__version__)"]) }
            if let python, let version, version.status == 0 {
                name = "gpxpy \(version.output)"
                command = [python, "-c", script, file]
            } else {
                command = nil
            }
        case .gpsbabel:
            name = "gpsbabel"
            missing = "apt-get install gpsbabel"
            let path = ExecutableLookup.path(of: "gpsbabel")
            if let path, let version = try? ProcessMeasurement.run([path, "-V"]),
                let number = version.output.split(separator: " ").first(where: { $0.first?.isNumber == true })
            {
                name = "gpsbabel \(number)"
            }
            command = path.map { [$0, "-i", "gpx", "-f", file] }
        }
        guard let command else { return Result(reader: reader, name: name, note: "not installed (\(missing))") }
        var times: [Double] = []
        var peak = 0
        var counted = -1
        for _ in 0..<runs {
            do {
                let result = try ProcessMeasurement.run(command)
                guard result.status == 0 else {
                    return Result(reader: reader, name: name, note: "failed with exit status \(result.status)")
                }
                peak = max(peak, result.peakRSSKiB)
                times.append(result.seconds)
                counted = Int(result.output.split(separator: " ").first ?? "") ?? -1
            } catch {
                return Result(reader: reader, name: name, note: "could not run: \(error)")
            }
        }
        let seconds = Statistics.median(times)
        var note: String?
        if counted >= 0, counted != points { note = "counted \(counted) points, expected \(points)" }
        return Result(
            reader: reader, name: name, pointsPerSecond: Double(points) / seconds, seconds: seconds,
            peakRSSMiB: Double(peak) / 1024, note: note)
    }
}
