import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// System V shared memory left by the gpsd instances the tests start.
///
/// Each gpsfake'd gpsd leaves its export segment (key derived from its port, removed by ``GPSFake/stop()``)
/// and the NTP segments `NTP0`–`NTP7` (fixed keys, shared by every gpsd on the machine). The NTP ones are
/// removed when the last gpsd of the tests has ended, if they are unused and were created by one of
/// our gpsd processes or did not exist before the tests.
enum SharedMemory {
    private struct Ledger {
        var running = 0
        var existingBefore: Set<Int32>?
        var ourDaemons: Set<pid_t> = []
    }

    /// One segment as /proc/sysvipc/shm lists it.
    struct Segment {
        var key: Int32
        var creator: pid_t
        var attached: Int
    }

    private static let ledger = Mutex(Ledger())
    private static let ntpKeys: Set<Int32> = Set((0..<8).map { 0x4E54_5030 + $0 })

    static func processStarted() {
        ledger.withLock { ledger in
            if ledger.existingBefore == nil { ledger.existingBefore = Set(segments().map(\.key)) }
            ledger.running += 1
        }
    }

    /// Remembers a gpsd we started, to recognise the segments it creates.
    static func daemonStarted(_ pid: pid_t) {
        ledger.withLock { _ = $0.ourDaemons.insert(pid) }
    }

    static func processEnded() {
        ledger.withLock { ledger in
            ledger.running -= 1
            guard ledger.running == 0, let before = ledger.existingBefore else { return }
            for segment in segments() where ntpKeys.contains(segment.key) && segment.attached == 0 {
                if !before.contains(segment.key) || ledger.ourDaemons.contains(segment.creator) {
                    remove(key: segment.key)
                }
            }
        }
    }

    /// Removes the segment with this key, if any.
    static func remove(key: Int32) {
        let id = shmget(key_t(key), 0, 0)
        if id >= 0 { _ = shmctl(id, IPC_RMID, nil) }
    }

    /// Every segment, from /proc/sysvipc/shm (columns: key shmid perms size cpid lpid nattch ...).
    static func segments() -> [Segment] {
        guard let text = try? String(contentsOfFile: "/proc/sysvipc/shm", encoding: .utf8) else { return [] }
        return text.split(separator: "\n").dropFirst().compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 6, let key = Int32(fields[0]), let creator = pid_t(fields[4]),
                let attached = Int(fields[6])
            else { return nil }
            return Segment(key: key, creator: creator, attached: attached)
        }
    }
}
