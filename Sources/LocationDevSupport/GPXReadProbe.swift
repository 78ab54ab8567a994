import Foundation
import LocationGPX

#if canImport(Glibc)
    import Glibc
#endif

/// One GPX file read with `GPXReader` in this process, measured: what `gpx-fuzz --read` and
/// `location-test-child --read` print (the hostile-GPX tests read every risky input in a child process).
public enum GPXReadProbe {
    /// One `/proc/self/status` field in KiB (`VmHWM`, `VmRSS`).
    static func statusKiB(_ field: String) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
        }
        return 0
    }

    /// Reads `path` with `GPXReader` and prints every point, then one JSON line: points, error, RSS before
    /// and at its peak (the peak is reset first, so the growth is the read's own), seconds, sanitizer.
    /// With `intoMemory`, the file is read whole into memory first (shows that the RSS figure sees memory
    /// that is used). Returns the exit status: 0 for a file that reads, 65 for one with an error in it, 66
    /// for one that cannot be opened. (It returns rather than exits, so that what it allocated is released
    /// before LeakSanitizer looks at the process's exit.)
    public static func read(_ path: String, intoMemory: Bool) -> Int32 {
        // Reset the peak RSS to the current RSS (Linux 4.0+), so the growth measured below is this read's own.
        let reset = (try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)) != nil
        let baseline = reset ? statusKiB("VmRSS") : statusKiB("VmHWM")
        let start = ContinuousClock.now
        var points = 0
        var failure: GPXError?
        var held: [UInt8] = []
        do {
            let reader: GPXReader
            if intoMemory {
                guard let data = FileManager.default.contents(atPath: path) else {
                    FileHandle.standardError.write(Data("cannot read \(path)\n".utf8))
                    return 66
                }
                held = [UInt8](data)
                reader = GPXReader(bytes: held, name: path)
            } else {
                reader = try GPXReader(contentsOf: path)
            }
            while let point = try reader.next() {
                print(point)
                points += 1
            }
        } catch {
            failure = error
        }
        let seconds = start.duration(to: .now) / .seconds(1)
        var summary: [String: Any] = [
            "points": points, "seconds": seconds, "baselineKiB": baseline, "peakKiB": statusKiB("VmHWM"),
            "peakReset": reset, "heldBytes": held.count,
        ]
        // A sanitizer's shadow memory and quarantine make RSS figures incomparable; say so.
        for (symbol, name) in [("__asan_init", "address"), ("__tsan_init", "thread")]
        where dlsym(UnsafeMutableRawPointer(bitPattern: 0), symbol) != nil {
            summary["sanitizer"] = name
        }
        if let failure {
            summary["error"] = [
                "code": failure.code.rawValue, "line": failure.line ?? 0, "column": failure.column ?? 0,
                "message": failure.message, "description": failure.description,
            ]
        }
        let json = (try? JSONSerialization.data(withJSONObject: summary, options: [.sortedKeys])) ?? Data("{}".utf8)
        print(String(decoding: json, as: UTF8.self))
        return failure == nil ? 0 : failure?.code == .io ? 66 : 65
    }
}
