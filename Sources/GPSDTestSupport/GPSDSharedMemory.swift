import Foundation
import LocationCore

#if canImport(Glibc)
    import Glibc
#endif

/// The System V shared memory that the gpsd instances started by tests and benchmarks leave behind.
///
/// Each gpsd creates an export segment, whose key the starter derives from the port (``exportKey(port:)``,
/// gpsfake's scheme) and removes when that gpsd ends, and the NTP segments `NTP0`–`NTP7` (fixed keys,
/// shared by every gpsd on the machine). The NTP ones are removed by a ledger of this process's gpsd
/// starters: when the last one has ended, each NTP segment that nothing is attached to is removed if one
/// of our gpsd processes created it or it did not exist before the first of them started. A system
/// gpsd's segments are left alone.
public enum GPSDSharedMemory {
    /// One segment as /proc/sysvipc/shm lists it.
    public struct Segment: Equatable, Sendable {
        /// Its key.
        public var key: Int32
        /// The process that created it.
        public var creator: pid_t
        /// How many processes have it attached.
        public var attached: Int

        /// A segment with this key, creator and attach count.
        public init(key: Int32, creator: pid_t, attached: Int) {
            self.key = key
            self.creator = creator
            self.attached = attached
        }
    }

    private struct Ledger: Sendable {
        var running = 0
        var existingBefore: Set<Int32>?
        var ourDaemons: Set<pid_t> = []
    }

    private static let ledger = Locked(Ledger())

    /// The keys of gpsd's NTP segments, `NTP0`–`NTP7`.
    public static let ntpKeys: Set<Int32> = Set((0..<8).map { 0x4E54_5030 + $0 })

    /// The export segment's key for a gpsd on `port`: `0x4770` then the port (gpsfake's `GPSD_SHM_KEY`).
    public static func exportKey(port: Int) -> Int32 {
        Int32(bitPattern: 0x4770_0000 | UInt32(port & 0xFFFF))
    }

    /// Call before starting a gpsd (or a gpsfake that starts one); balance with ``processEnded()``.
    public static func processStarted() {
        ledger.withLock { ledger in
            if ledger.existingBefore == nil { ledger.existingBefore = Set(segments().map(\.key)) }
            ledger.running += 1
        }
    }

    /// Remembers a gpsd we started, to recognise the segments it creates.
    public static func daemonStarted(_ pid: pid_t) {
        ledger.withLock { _ = $0.ourDaemons.insert(pid) }
    }

    /// Call when a gpsd counted by ``processStarted()`` has ended; the last one removes the NTP segments
    /// that are ours and unused.
    public static func processEnded() {
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

    /// Removes the segment with this key, if there is one (it goes once the last process detaches).
    public static func remove(key: Int32) {
        let id = shmget(key_t(key), 0, 0)
        if id >= 0 { _ = shmctl(id, IPC_RMID, nil) }
    }

    /// Every segment on the machine, from /proc/sysvipc/shm (empty when it cannot be read).
    public static func segments() -> [Segment] {
        // Read to the end: /proc reports a size of 0, and a reader that trusts it (or stops after one page)
        // misses the segments listed after the first 4 KiB.
        guard let file = FileHandle(forReadingAtPath: "/proc/sysvipc/shm") else { return [] }
        defer { try? file.close() }
        guard let data = try? file.readToEnd() else { return [] }
        return segments(listing: String(decoding: data, as: UTF8.self))
    }

    /// The segments in a /proc/sysvipc/shm listing: a header line, then `key shmid perms size cpid lpid
    /// nattch ...` per segment, keys in decimal.
    public static func segments(listing text: String) -> [Segment] {
        text.split(separator: "\n").dropFirst().compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 6, let key = Int32(fields[0]), let creator = pid_t(fields[4]),
                let attached = Int(fields[6])
            else { return nil }
            return Segment(key: key, creator: creator, attached: attached)
        }
    }
}
