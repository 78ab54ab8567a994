import Foundation
import LocationCore

/// This process's resident memory, from /proc/self/status.
enum ProcessMemory {
    /// VmRSS in bytes (0 when /proc is not there).
    static func residentBytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap({ Int($0) })
        else { return 0 }
        return kilobytes * 1024
    }

    /// Samples the resident memory every 20 ms while `work` runs; returns the highest value seen.
    static func peak<T: Sendable>(during work: @Sendable () async throws -> T) async rethrows -> (result: T, peak: Int) {
        let highest = Highest()
        let sampler = Task {
            while !Task.isCancelled {
                highest.offer(residentBytes())
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        defer { sampler.cancel() }
        let result = try await work()
        sampler.cancel()
        _ = await sampler.value
        highest.offer(residentBytes())
        return (result, highest.value)
    }

    private final class Highest: Sendable {
        private let stored = Locked(0)
        func offer(_ value: Int) { stored.withLock { $0 = max($0, value) } }
        var value: Int { stored.value }
    }
}
