// locationbench: every headline figure of the project next to its peers, measured in one run.
//
//   swift run -c release locationbench [--quick] [--json] [--runs N] [--only ITEMS]
//   swift run -c release locationbench batch|gpx|gpsd|apps|uplink|uplink-live|fleet|regions|motion [OPTIONS]   one focused measurement (below)
//
// Inputs are generated here from a fixed seed. Each figure is a median of several runs; peers that are not
// installed are reported as such (null in JSON). The measuring code is in LocationBenchmarks, shared
// with the subcommands: `batch` (held batch, flush, journal: BatchCommand), `gpx` (GPX readers side by side
// at any size: GPXCommand), `gpsd` (latency, CPU, recovery, acquisition: GPSDCommand), `apps` (locationd
// serving many apps: AppsCommand), `uplink` (an uplink's drain to a broker: UplinkCommand), `uplink-live` (fix → broker
// latency at 1 Hz and a broker restart, beside a shell bridge: UplinkLiveCommand), `fleet` (100
// daemons into one broker: FleetCommand), `regions` (region evaluation per fix: RegionsCommand) and `motion`
// (what pausesWhenStationary saves while parked: MotionCommand).
import Foundation
import LocationBenchmarks
import LocationCore

// Child mode: `--read READER FILE` (the GPX readers run in child processes of this executable).
GPXReadChild.runIfRequested(CommandLine.arguments)

// The focused measurements, each with its own options (`locationbench SUBCOMMAND --help` where it has one).
let subcommands: [String: @Sendable ([String]) async throws -> Void] = [
    "batch": BatchCommand.run, "gpx": GPXCommand.run, "gpsd": GPSDCommand.run, "apps": AppsCommand.run,
    "uplink": UplinkCommand.run, "uplink-live": UplinkLiveCommand.run, "fleet": FleetCommand.run,
    "regions": RegionsCommand.run, "motion": MotionCommand.run,
]
if let name = CommandLine.arguments.dropFirst().first, let subcommand = subcommands[name] {
    try await subcommand(Array(CommandLine.arguments.dropFirst(2)))
    exit(0)
}

var quick = false
var json = false
var runs = 3
var only: Set<Int>?
var arguments = Array(CommandLine.arguments.dropFirst())
while let argument = arguments.first {
    arguments.removeFirst()
    switch argument {
    case "--quick": quick = true
    case "--json": json = true
    case "--runs" where Int(arguments.first ?? "").map({ $0 > 0 }) == true: runs = Int(arguments.removeFirst())!
    case "--only":
        let items = (arguments.first ?? "").split(separator: ",").compactMap { Int($0) }
        guard !items.isEmpty, items.allSatisfy({ (1...7).contains($0) }) else {
            FileHandle.standardError.write(Data("locationbench: --only needs item numbers 1-7, such as --only 2,5\n".utf8))
            exit(64)
        }
        arguments.removeFirst()
        only = Set(items)
    case "--help", "-h":
        print(
            """
            usage: locationbench [--quick] [--json] [--runs N] [--only ITEMS]
                   locationbench batch [--runs N]
                   locationbench gpx [--points N] [--seed S] [--runs R] [--keep] [--readers LIST]
                   locationbench gpsd [latency|cpu|reduced|recovery|acquisition|all] [--seconds N] [--interval N]
                   locationbench apps [--runs N] [--seconds N]

            Measures every headline figure of swift-location next to its peers (gpxpy, gpsbabel,
            FoundationXML, a libxml2 counting floor, gpspipe) in one run and prints one table:
            our value, each peer's value, the ratio and the goal. Build with -c release.

              --quick    small inputs and short feeds (under a minute), for CI and smoke checks
              --json     the same figures as a JSON array, one object per figure
              --runs N   runs per measurement, the median is reported (default 3)
              --only 2,5 measure only these items (1 GPX parse, 2 replay, 3 live latency, 4 CPU,
                         5 held batch, 6 one position, 7 scaling)

              batch      the held-batch figures alone: memory per held fix, flush, journal appends
              gpx        the GPX readers side by side on a generated file of any size
              gpsd       the gpsd source: latency, CPU of reduced vs high, recovery, acquisition cost
            """)
        exit(0)
    default:
        FileHandle.standardError.write(Data("usage: locationbench [--quick] [--json] [--runs N] [--only ITEMS] | batch | gpx | gpsd (--help)\n".utf8))
        exit(64)
    }
}

func progress(_ text: String) {
    FileHandle.standardError.write(Data("locationbench: \(text)\n".utf8))
}

func points(_ count: Int) -> String {
    count >= 1_000_000 ? "\(count / 1_000_000) M" : count >= 1_000 ? "\(count / 1_000) k" : "\(count)"
}

/// Runs one section; a failure becomes a note on a figure without a value instead of ending the run.
func section(_ item: Int, _ name: String, unit: String, higherIsBetter: Bool, _ body: () async throws -> [Figure]) async -> [Figure] {
    if let selectedItems, !selectedItems.contains(item) { return [] }
    do {
        return try await body()
    } catch {
        progress("\(name) failed: \(error)")
        return [Figure(item: item, name: name, ours: nil, unit: unit, higherIsBetter: higherIsBetter, note: "failed: \(error)")]
    }
}

/// The items `--only` selected (all when `nil`), fixed once the arguments are read.
let selectedItems = only

/// Whether `--only` selected this item (every item is selected without it).
func wants(_ item: Int) -> Bool { selectedItems?.contains(item) ?? true }
let gpxPoints = quick ? 50_000 : 1_000_000
let scalingSizes = quick ? [10_000, 100_000, 1_000_000] : [10_000, 100_000, 1_000_000, 10_000_000]
let liveSeconds = quick ? 4.0 : 60.0
// The reduced policy as shipped acquires one fix per 60 s; two intervals per phase.
let cpuSeconds = quick ? 4.0 : 120.0
let cpuInterval = quick ? 2.0 : ReducedAccuracyPolicy().interval.seconds
let daemonRuns = quick ? 10 : 30
let started = ContinuousClock.now

let directory = FileManager.default.temporaryDirectory.appendingPathComponent("locationbench-\(getpid())").path
try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: directory) }
var figures: [Figure] = []

// 1. GPX parse against its peers.
let gpxFile = "\(directory)/track-\(gpxPoints).gpx"
progress("generating \(points(gpxPoints)) track points (seed \(GPXBenchFile.defaultSeed))")
try GPXBenchFile.generate(path: gpxFile, points: gpxPoints)
GPXParseBenchmark.warm(gpxFile)
let parse = GPXParseBenchmark(points: gpxPoints, runs: runs)
var parsed: [GPXParseBenchmark.Reader: GPXParseBenchmark.Result] = [:]
for reader in GPXParseBenchmark.Reader.allCases where wants(1) || (wants(7) && reader == .locationGPX) {
    progress("1. GPX parse: \(reader.rawValue)")
    parsed[reader] = parse.measure(reader, file: gpxFile)
}
let peerNames: [(GPXParseBenchmark.Reader, String)] = [
    (.gpxpy, "gpxpy"), (.gpsbabel, "gpsbabel"), (.foundationXML, "FoundationXML"), (.libxml2Count, "libxml2 floor"),
]
let versions = peerNames.compactMap { parsed[$0.0].map { "\($0.name)\($0.note.map { ": \($0)" } ?? "")" } }
    .joined(separator: ", ")
if wants(1) {
    figures.append(
        Figure(
            item: 1, name: "GPX parse, \(points(gpxPoints)) trkpt with ele + time",
            ours: parsed[.locationGPX]?.pointsPerSecond, unit: "points/s",
            peers: peerNames.map { ($0.1, parsed[$0.0]?.pointsPerSecond) }, higherIsBetter: true,
            goals: [.atLeast(1_200_000), .timesBetterThan("gpxpy", 30), .timesBetterThan("gpsbabel", 4)],
            note: "whole child process, median of \(runs); \(versions)"))
    figures.append(
        Figure(
            item: 1, name: "GPX parse, \(points(gpxPoints)) trkpt: peak RSS", ours: parsed[.locationGPX]?.peakRSSMiB,
            unit: "MiB", peers: peerNames.map { ($0.1, parsed[$0.0]?.peakRSSMiB) }, higherIsBetter: false,
            note: ProcessMeasurement.rssMethod))
}

// 2. Replay as fast as possible.
progress("2. replay through LocationManager")
figures += await section(2, "replay as fast as possible through LocationManager", unit: "locations/s", higherIsBetter: true) {
    let rate = try await ReplayBenchmark.manager(file: gpxFile, points: gpxPoints, runs: runs)
    return [
        Figure(
            item: 2, name: "replay as fast as possible, \(points(gpxPoints)) points through LocationManager to a no-op delegate",
            ours: rate, unit: "locations/s", higherIsBetter: true, goals: [.atLeast(1_000_000)],
            note: "file read and parsed in the same pass")
    ]
}
progress("2. locationctl replay --fast --format jsonl")
figures += await section(2, "locationctl replay --fast --format jsonl > /dev/null", unit: "lines/s", higherIsBetter: true) {
    let rate = try ReplayBenchmark.commandLine(file: gpxFile, points: gpxPoints, runs: runs)
    return [
        Figure(
            item: 2, name: "`locationctl replay --fast --format jsonl > /dev/null`, \(points(gpxPoints)) points", ours: rate,
            unit: "lines/s", higherIsBetter: true,
            note: rate == nil ? "locationctl not built (swift build -c release)" : "whole process")
    ]
}

// 3. Live path from a real gpsd reading a receiver paced like a serial line, at 1 Hz and 10 Hz.
for rate in [1, 10] {
    let seconds = rate == 1 ? liveSeconds * 2 : liveSeconds
    progress("3. live latency from gpsd, \(rate) Hz receiver, \(Int(seconds)) s")
    figures += await section(3, "live \(rate) Hz from gpsd: latency", unit: "ms", higherIsBetter: false) {
        guard PacedReceiver.isAvailable else { throw BenchError("gpsd not installed") }
        let live = try await LiveLatencyBenchmark.run(seconds: seconds, rateHz: rate)
        let line = "\(rate) Hz at \(live.baud) baud, \(String(format: "%.1f", live.reportsPerEpoch)) TPVs per epoch, \(live.fixes) fixes"
        return [
            Figure(
                item: 3, name: "live \(rate) Hz: the epoch's last TPV on the wire → delegate call, p50 (\(line))",
                ours: live.lastP50 / 1000, unit: "ms", peers: [("gpspipe -w prints it", live.gpspipeLastP50.map { $0 / 1000 })],
                higherIsBetter: false, goals: [.atMost(2)]),
            Figure(
                item: 3, name: "live \(rate) Hz: the epoch's last TPV on the wire → delegate call, p99",
                ours: live.lastP99 / 1000, unit: "ms", peers: [("gpspipe -w prints it", live.gpspipeLastP99.map { $0 / 1000 })],
                higherIsBetter: false, goals: [.atMost(10)],
                note: "the added latency of the TPV that completes an epoch; goal: p99 no worse than gpspipe's"),
            Figure(
                item: 3, name: "live \(rate) Hz: the epoch's first TPV on the wire → delegate call, p50",
                ours: live.firstP50 / 1000, unit: "ms", peers: [("gpspipe -w prints the first TPV", live.gpspipeFirstP50.map { $0 / 1000 })],
                higherIsBetter: false,
                note: "ours waits for the epoch's last TPV (the sentences still on the serial line); gpspipe prints each partial TPV as is"),
        ]
    }
}

// 4. CPU of the reduced policy.
progress("4. CPU reduced vs high, \(Int(cpuSeconds)) s each")
figures += await section(4, "CPU time, reduced ÷ high", unit: "", higherIsBetter: false) {
    guard GPSFake.isInstalled else { throw BenchError("gpsd or gpsfake not installed") }
    let cpu = try await GPSDBenchmark.cpu(seconds: cpuSeconds, interval: cpuInterval)
    let high = cpu.high!
    let detail = String(
        format: "%.3f s vs %.3f s CPU, idle process %.3f s; messages read %d vs %d", cpu.reduced.cpuSeconds,
        high.cpuSeconds, cpu.idle, cpu.reduced.messages, high.messages)
    return [
        Figure(
            item: 4,
            name: "CPU time of the policy, reduced (one fix per \(Int(cpuInterval)) s) ÷ high, same 10 Hz gpsd feed, \(Int(cpuSeconds)) s each, idle process subtracted",
            ours: cpu.ratioLessIdle, unit: "", higherIsBetter: false, goals: [.atMost(0.05)], note: detail),
        Figure(
            item: 4, name: "the same, whole process (idle process included)", ours: cpu.ratio, unit: "",
            higherIsBetter: false, note: detail),
    ]
}

// 5. Suspended batch.
progress("5. held batch, journal, flush")
figures += await section(5, "held batch", unit: "B", higherIsBetter: false) {
    let batch = try BatchBenchmark(appendedFixes: quick ? 100_000 : 500_000, runs: quick ? runs : max(runs, 5)).run()
    let array = Double(BatchBenchmark.locationStride)
    return [
        Figure(
            item: 5, name: "held batch of 1,000,000 fixes: encoded bytes per fix", ours: batch.encodedBytesPerFix, unit: "B",
            peers: [("[Location] array", array)], higherIsBetter: false, goals: [.atMost(96)]),
        Figure(
            item: 5, name: "held batch of 1,000,000 fixes: resident memory growth per fix", ours: batch.residentBytesPerFix,
            unit: "B", peers: [("[Location] array", array)], higherIsBetter: false, goals: [.atMost(96)]),
        Figure(
            item: 5, name: "journal append, one write per fix", ours: batch.journalAppendsPerSecond, unit: "fixes/s",
            higherIsBetter: true, goals: [.atLeast(200_000)]),
        Figure(
            item: 5, name: "flush of a 100,000-fix held batch to a delegate", ours: batch.flushSeconds * 1000, unit: "ms",
            higherIsBetter: false, goals: [.atMost(50)]),
    ]
}
figures += await section(5, "held batch through locationd", unit: "ms", higherIsBetter: false) {
    let fixes = quick ? 10_000 : 100_000
    guard let handOver = try await DaemonHandOverBenchmark.run(runs: quick ? 1 : max(runs, 5), fixes: fixes) else {
        return [Figure(item: 5, name: "held batch through locationd", ours: nil, unit: "ms", higherIsBetter: false, note: "locationd not built")]
    }
    return [
        Figure(
            item: 5,
            name: "a \(handOver.fixes)-fix batch locationd held for a gone app: the app's manager started → its delegate has the batch (DaemonLocationSource)",
            ours: handOver.seconds * 1000, unit: "ms", higherIsBetter: false, goals: quick ? [] : [.atMost(200)]),
    ]
}

// 6. One position from a running service.
progress("6. locationctl current vs gpspipe -w -n 5")
figures += await section(6, "one position from a running service", unit: "ms", higherIsBetter: false) {
    let daemonTrack = "\(directory)/daemon.gpx"
    try GPXBenchFile.generate(path: daemonTrack, points: 3_600)
    let result = try await DaemonBenchmark.run(runs: daemonRuns, gpxFile: daemonTrack)
    let notes = [result.locationctlNote, result.gpspipeNote.map { "gpspipe: \($0)" }].compactMap { $0 }
    return [
        Figure(
            item: 6, name: "one position: `locationctl current` against locationd vs `gpspipe -w -n 5` against gpsd, wall time",
            ours: result.locationctlCurrent.map { $0 * 1000 }, unit: "ms",
            peers: [("gpspipe -w -n 5", result.gpspipe.map { $0 * 1000 })], higherIsBetter: false, goals: [.atMost(20)],
            note: (["whole process, median of \(daemonRuns)"] + notes).joined(separator: "; "))
    ]
}

// 7. Scaling.
var scaling: [(points: Int, seconds: Double, rss: Double)] = []
for size in scalingSizes where wants(7) {
    progress("7. scaling: \(points(size)) points")
    let result: GPXParseBenchmark.Result
    if size == gpxPoints, let known = parsed[.locationGPX] {
        result = known
    } else {
        let file = "\(directory)/scaling-\(size).gpx"
        try GPXBenchFile.generate(path: file, points: size)
        GPXParseBenchmark.warm(file)
        result = GPXParseBenchmark(points: size, runs: runs).measure(.locationGPX, file: file)
        try? FileManager.default.removeItem(atPath: file)
    }
    if let seconds = result.seconds, let rss = result.peakRSSMiB { scaling.append((size, seconds, rss)) }
    figures.append(
        Figure(
            item: 7, name: "scaling: parse \(points(size)) points, time", ours: result.seconds, unit: "s",
            higherIsBetter: false, note: result.note))
    figures.append(
        Figure(item: 7, name: "scaling: parse \(points(size)) points, peak RSS", ours: result.peakRSSMiB, unit: "MiB", higherIsBetter: false))
}
if let largest = scaling.last, let base = scaling.first(where: { $0.points == 100_000 }), let smallest = scaling.first {
    figures.append(
        Figure(
            item: 7, name: "scaling: time per point at \(points(largest.points)) ÷ at \(points(base.points))",
            ours: (largest.seconds / Double(largest.points)) / (base.seconds / Double(base.points)), unit: "",
            higherIsBetter: false, goals: [.atMost(1.2)], note: "linear time is 1; process start-up weighs more on the smaller file"))
    figures.append(
        Figure(
            item: 7, name: "scaling: peak RSS at \(points(largest.points)) ÷ at \(points(smallest.points))",
            ours: largest.rss / smallest.rss, unit: "", higherIsBetter: false, goals: [.atMost(1.1)], note: "flat memory is 1"))
}

let elapsed = started.duration(to: .now).components.seconds
if json {
    print(try FigureReport.json(figures))
} else {
    print("locationbench \(quick ? "--quick" : "(full run)"): \(Machine.description); medians of \(runs) runs unless noted; \(elapsed) s")
    print()
    print(FigureReport.table(figures))
}
