import Foundation
import LocationCore

#if canImport(Glibc)
    import Glibc
#endif

/// One run of a child process: its wall time (start-up included), peak RSS, output and exit status.
package struct ProcessMeasurement: Sendable {
    /// Wall time from spawn to reaping, in seconds.
    package var seconds: Double
    /// The child's peak resident set size, in KiB.
    package var peakRSSKiB: Int
    /// Its standard output, trimmed.
    package var output: String
    /// Its exit status (128 + signal when killed).
    package var status: Int32

    /// Peak RSS is measured by GNU time (`/usr/bin/time -f %M`) when it is installed: a child started
    /// straight from this process would inherit this process's high-water mark (vfork + exec keep it).
    /// Without GNU time (or with `GPX_BENCH_SAMPLE_RSS` set) the child's `VmHWM` is sampled from /proc
    /// every 2 ms instead (approximate).
    package static let gnuTime: String? =
        ProcessInfo.processInfo.environment["GPX_BENCH_SAMPLE_RSS"] == nil && access("/usr/bin/time", X_OK) == 0
        ? "/usr/bin/time" : nil

    /// How peak RSS is measured, for the report.
    package static var rssMethod: String {
        gnuTime == nil ? "VmHWM sampled every 2 ms" : "GNU time %M"
    }

    /// Runs `argv` (a path and its arguments) to completion and measures it. `discardOutput` sends its
    /// standard output to /dev/null instead of collecting it. Without `measureRSS` the child is started
    /// directly rather than under GNU time, and `peakRSSKiB` is 0. `discardErrors` sends its standard error
    /// to /dev/null.
    package static func run(
        _ argv: [String], discardOutput: Bool = false, measureRSS: Bool = true, discardErrors: Bool = false
    ) throws -> ProcessMeasurement {
        let gnuTime = measureRSS ? gnuTime : nil
        let sampling = measureRSS && gnuTime == nil
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
        if discardErrors { posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0) }
        posix_spawn_file_actions_addclose(&actions, pipe[0])
        posix_spawn_file_actions_addclose(&actions, pipe[1])
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
            let reaped = wait4(pid, &status, sampling ? WNOHANG : 0, &usage)
            if reaped == pid { break }
            if reaped < 0 && errno != EINTR { break }
            if sampling {
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
        let components = elapsed.components
        return ProcessMeasurement(
            seconds: Double(components.seconds) + Double(components.attoseconds) * 1e-18, peakRSSKiB: peak,
            output: String(decoding: collected.value, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines),
            status: exitCode)
    }

    /// The `VmHWM` line of /proc/PID/status, in KiB.
    private static func vmHWM(_ pid: pid_t) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        }
        return nil
    }
}
