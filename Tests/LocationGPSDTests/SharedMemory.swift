import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// System V shared memory left by the gpsd instances the tests start.
///
/// Each gpsfake'd gpsd leaves its export segment (key derived from its port, removed by ``GPSFake/stop()``)
/// and the NTP segments `NTP0`–`NTP7` (fixed keys, shared by every gpsd on the machine). The NTP ones are
/// removed when the last gpsd of the tests has ended, and only if they did not exist before the tests.
enum SharedMemory {
    private struct Ledger {
        var running = 0
        var existingBefore: Set<Int32>?
    }

    private static let ledger = Mutex(Ledger())
    private static let ntpKeys: [Int32] = (0..<8).map { 0x4E54_5030 + $0 }

    static func processStarted() {
        ledger.withLock { ledger in
            if ledger.existingBefore == nil { ledger.existingBefore = Set(segments().keys) }
            ledger.running += 1
        }
    }

    static func processEnded() {
        ledger.withLock { ledger in
            ledger.running -= 1
            guard ledger.running == 0, let before = ledger.existingBefore else { return }
            let now = segments()
            for key in ntpKeys where now[key] == 0 && !before.contains(key) {
                remove(key: key)
            }
        }
    }

    /// Removes the segment with this key, if any.
    static func remove(key: Int32) {
        let id = shmget(key_t(key), 0, 0)
        if id >= 0 { _ = shmctl(id, IPC_RMID, nil) }
    }

    /// Every segment's key and attach count, from /proc/sysvipc/shm.
    static func segments() -> [Int32: Int] {
        guard let text = try? String(contentsOfFile: "/proc/sysvipc/shm", encoding: .utf8) else { return [:] }
        var result: [Int32: Int] = [:]
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 6, let key = Int32(fields[0]), let attached = Int(fields[6]) else { continue }
            result[key] = attached
        }
        return result
    }
}
