// gpx-bench: how fast LocationGPX reads a large GPX file, next to gpxpy and gpsbabel.
//
//   swift run -c release gpx-bench [--points N] [--seed S] [--runs R] [--keep] [--readers LIST]
//
// Writes a GPX 1.1 file of N track points (default 1,000,000) with <ele> and <time>, from a fixed seed,
// into a temporary directory; then reads it R times (default 3) with each reader in a child process and
// reports the best points/s (wall time of the whole child process, start-up included) and the child's
// peak RSS (getrusage). Readers that are not installed are reported as such.
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Foundation
import LocationCore
import LocationGPX

// MARK: - Child mode: read a file with LocationGPX and print the number of points.

if CommandLine.arguments.count == 3, CommandLine.arguments[1] == "--read" {
    let path = CommandLine.arguments[2]
    do {
        let reader = try GPXReader(contentsOf: path)
        var points = 0
        var timed = 0
        try reader.forEach { point in
            points += 1
            if point.time != nil { timed += 1 }
        }
        print("\(points) \(timed)")
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("gpx-bench: \(error)\n".utf8))
        exit(65)
    }
}

// MARK: - Options

var pointCount = 1_000_000
var seed: UInt64 = 20_240_501
var runs = 3
var keep = false
var readers: Set<String> = ["locationgpx", "gpxpy", "gpsbabel"]
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--points": pointCount = arguments.popFirst().flatMap { Int($0) } ?? pointCount
    case "--seed": seed = arguments.popFirst().flatMap { UInt64($0) } ?? seed
    case "--runs": runs = max(1, arguments.popFirst().flatMap { Int($0) } ?? runs)
    case "--keep": keep = true
    case "--readers": readers = Set((arguments.popFirst() ?? "").lowercased().split(separator: ",").map(String.init))
    default:
        FileHandle.standardError.write(Data("usage: gpx-bench [--points N] [--seed S] [--runs R] [--keep] [--readers locationgpx,gpxpy,gpsbabel]\n".utf8))
        exit(64)
    }
}

// MARK: - Generate the file

/// SplitMix64: small, fast and the same on every platform.
struct SplitMix64 {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}

func appendFixed(_ value: Double, digits: Int, to out: inout [UInt8]) {
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    var scaled = Int((abs(value) * scale).rounded())
    if value < 0, scaled != 0 { out.append(0x2D) }
    var divisor = 1
    for _ in 0..<digits { divisor *= 10 }
    out.append(contentsOf: String(scaled / divisor).utf8)
    if digits > 0 {
        out.append(0x2E)
        scaled %= divisor
        var fraction = [UInt8](repeating: 0x30, count: digits)
        for i in stride(from: digits - 1, through: 0, by: -1) {
            fraction[i] = UInt8(0x30 + scaled % 10)
            scaled /= 10
        }
        out.append(contentsOf: fraction)
    }
}

func generate(path: String, points: Int, seed: UInt64) throws -> Int {
    guard let file = fopen(path, "w") else { throw POSIXError(.EIO) }
    defer { fclose(file) }
    var random = SplitMix64(state: seed)
    var out: [UInt8] = []
    out.reserveCapacity(1 << 20)
    func flush() {
        out.withUnsafeBytes { _ = fwrite($0.baseAddress, 1, $0.count, file) }
        out.removeAll(keepingCapacity: true)
    }
    out.append(
        contentsOf: """
            <?xml version="1.0" encoding="UTF-8"?>
            <gpx version="1.1" creator="gpx-bench" xmlns="http://www.topografix.com/GPX/1/1">
              <trk>
                <name>gpx-bench seed \(seed)</name>
                <trkseg>

            """.utf8)
    var latitude = 47.3769, longitude = 8.5417, elevation = 408.0
    var time = Date(timeIntervalSince1970: 1_714_543_200)  // 2024-05-01T06:00:00Z
    var total = 0
    for index in 0..<points {
        latitude += (random.unit() - 0.5) * 0.0002
        longitude += (random.unit() - 0.5) * 0.0003
        elevation += (random.unit() - 0.5) * 2
        // 1 Hz, with a tenth of a second now and then, as phones write.
        time += random.next() % 10 == 0 ? 1.1 : 1
        out.append(contentsOf: "      <trkpt lat=\"".utf8)
        appendFixed(latitude, digits: 7, to: &out)
        out.append(contentsOf: "\" lon=\"".utf8)
        appendFixed(longitude, digits: 7, to: &out)
        out.append(contentsOf: "\">\n        <ele>".utf8)
        appendFixed(elevation, digits: 2, to: &out)
        out.append(contentsOf: "</ele>\n        <time>".utf8)
        RFC3339.append(time, to: &out)
        out.append(contentsOf: "</time>\n      </trkpt>\n".utf8)
        if index % 8192 == 0 {
            total += out.count
            flush()
        }
    }
    out.append(contentsOf: "    </trkseg>\n  </trk>\n</gpx>\n".utf8)
    total += out.count
    flush()
    return total
}

// MARK: - Run a child and measure it

struct Measurement {
    var seconds: Double
    var peakRSSKiB: Int
    var output: String
    var status: Int32
}

func which(_ program: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    for directory in path.split(separator: ":") {
        let candidate = "\(directory)/\(program)"
        if access(candidate, X_OK) == 0 { return candidate }
    }
    return nil
}

/// Peak RSS is measured by GNU time (`/usr/bin/time -f %M`) when it is installed: a child started
/// straight from this process would inherit this process's high-water mark (vfork + exec keep it).
/// Without GNU time (or with GPX_BENCH_SAMPLE_RSS set) the child's `VmHWM` is sampled from /proc every
/// 2 ms instead (approximate).
let gnuTime =
    ProcessInfo.processInfo.environment["GPX_BENCH_SAMPLE_RSS"] == nil && access("/usr/bin/time", X_OK) == 0
    ? "/usr/bin/time" : nil

func measure(_ argv: [String], discardOutput: Bool = false) throws -> Measurement {
    let rssFile = NSTemporaryDirectory() + "/gpx-bench-rss-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
    defer { unlink(rssFile) }
    let command = gnuTime.map { [$0, "-f", "%M", "-o", rssFile] + argv } ?? argv
    var pipe: [Int32] = [0, 0]
    guard Glibc.pipe(&pipe) == 0 else { throw POSIXError(.EIO) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    if discardOutput {
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    } else {
        posix_spawn_file_actions_adddup2(&actions, pipe[1], 1)
    }
    posix_spawn_file_actions_addclose(&actions, pipe[0])
    var cArguments = command.map { strdup($0) } + [nil]
    defer { for pointer in cArguments { free(pointer) } }
    var pid: pid_t = 0
    let start = ContinuousClock.now
    let spawned = posix_spawn(&pid, command[0], &actions, nil, &cArguments, environ)
    close(pipe[1])
    guard spawned == 0 else {
        close(pipe[0])
        throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO)
    }
    // Read the child's output on another thread while sampling its VmHWM here (used without GNU time).
    let collected = Locked<[UInt8]>([])
    let readerDone = DispatchSemaphore(value: 0)
    let thread = Thread { [fd = pipe[0]] in
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(fd, &chunk, chunk.count)
            if count <= 0 { break }
            collected.withLock { $0.append(contentsOf: chunk[0..<count]) }
        }
        readerDone.signal()
    }
    thread.start()
    var sampledKiB = 0
    var status: Int32 = 0
    var usage = rusage()
    while true {
        let reaped = wait4(pid, &status, gnuTime == nil ? WNOHANG : 0, &usage)
        if reaped == pid { break }
        if reaped < 0 && errno != EINTR { break }
        if gnuTime == nil {
            sampledKiB = max(sampledKiB, vmHWM(pid) ?? 0)
            usleep(2000)
        }
    }
    let elapsed = start.duration(to: .now)
    readerDone.wait()
    close(pipe[0])
    let exitCode: Int32 = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    var peak = sampledKiB
    if gnuTime != nil, let text = try? String(contentsOfFile: rssFile, encoding: .utf8) {
        // GNU time writes "Command exited with non-zero status N" before %M when the child fails.
        peak = Int(text.split(separator: "\n").last.map(String.init) ?? "") ?? 0
    }
    return Measurement(
        seconds: elapsed.seconds, peakRSSKiB: peak,
        output: String(decoding: collected.value, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines),
        status: exitCode)
}

/// The `VmHWM` line of /proc/PID/status, in KiB.
func vmHWM(_ pid: pid_t) -> Int? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
    for line in text.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
    }
    return nil
}


struct Row {
    var reader: String
    var pointsPerSecond: Double?
    var peakRSSMiB: Double?
    var note: String
}

func bench(_ name: String, _ argv: [String]?, expect: Int, runs: Int, missing: String) -> Row {
    guard let argv else { return Row(reader: name, note: "not installed (\(missing))") }
    var best: Measurement?
    var peak = 0
    for _ in 0..<runs {
        do {
            let result = try measure(argv)
            guard result.status == 0 else {
                return Row(reader: name, note: "failed with exit status \(result.status)")
            }
            peak = max(peak, result.peakRSSKiB)
            if best == nil || result.seconds < best!.seconds { best = result }
        } catch {
            return Row(reader: name, note: "could not run: \(error)")
        }
    }
    guard let best else { return Row(reader: name, note: "no run") }
    let counted = Int(best.output.split(separator: " ").first ?? "") ?? -1
    var note = "best of \(runs), \(String(format: "%.2f", best.seconds)) s"
    if counted >= 0, counted != expect { note += "; counted \(counted) points, expected \(expect)" }
    return Row(
        reader: name, pointsPerSecond: Double(expect) / best.seconds, peakRSSMiB: Double(peak) / 1024, note: note)
}

let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gpx-bench-\(getpid())").path
try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
let file = "\(directory)/bench-\(pointCount)-\(seed).gpx"
let generationStart = ContinuousClock.now
let size = try generate(path: file, points: pointCount, seed: seed)
print(
    "generated \(file): \(pointCount) trkpt with ele + time, \(size / 1_000_000) MB, seed \(seed), "
        + "in \(String(format: "%.1f", generationStart.duration(to: .now).seconds)) s")

// Warm the page cache so every reader starts from the same place.
_ = try? measure(["/bin/cat", file], discardOutput: true)
if let floor = try? measure(["/bin/true"]) {
    let method = gnuTime == nil ? "VmHWM sampled every 2 ms (GNU time not used)" : "GNU time %M"
    print("peak RSS measured with \(method); /bin/true measures \(floor.peakRSSKiB) KiB")
}

// The child that reads with LocationGPX is this very executable, in `--read` mode.
let selfPath =
    (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
    ?? URL(fileURLWithPath: CommandLine.arguments[0]).path
var rows: [Row] = []
if readers.contains("locationgpx") {
    rows.append(
        bench(
            "LocationGPX (libxml2 SAX2 push, times parsed)", [selfPath, "--read", file], expect: pointCount,
            runs: runs, missing: ""))
}
if readers.contains("gpxpy") {
    let script =
        "import sys, gpxpy\ng = gpxpy.parse(open(sys.argv[1], encoding='utf-8'))\n"
        + "print(sum(len(s.points) for t in g.tracks for s in t.segments))"
    let python = which("python3")
    let version = python.flatMap { try? measure([$0, "-c", "import gpxpy; print(gpxpy.__version__)"]) }
    let installed = version?.status == 0
    rows.append(
        bench(
            installed ? "gpxpy \(version!.output)" : "gpxpy", installed ? [python!, "-c", script, file] : nil,
            expect: pointCount, runs: runs, missing: "pip install gpxpy"))
}
if readers.contains("gpsbabel") {
    rows.append(
        bench(
            "gpsbabel (GPX reader, no output)", which("gpsbabel").map { [$0, "-i", "gpx", "-f", file] },
            expect: pointCount, runs: runs, missing: "apt-get install gpsbabel"))
}

print()
print("| reader | points/s | peak RSS | notes |")
print("|---|---:|---:|---|")
for row in rows {
    let rate = row.pointsPerSecond.map { String(format: "%.2f M", $0 / 1e6) } ?? "–"
    let rss = row.peakRSSMiB.map { String(format: "%.0f MiB", $0) } ?? "–"
    print("| \(row.reader) | \(rate) | \(rss) | \(row.note) |")
}

if keep {
    print("\nkept \(file)")
} else {
    try? FileManager.default.removeItem(atPath: directory)
}
