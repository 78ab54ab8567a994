import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Removes the System V segments a gpsd left that were not there before (`ipcs -m`).
package struct SharedMemoryCleanup: Sendable {
    private let before: Set<Int32>

    package init() { before = Set(Self.segments().keys) }

    package func removeNew() {
        for (key, attached) in Self.segments() where attached == 0 && !before.contains(key) {
            let id = shmget(key_t(key), 0, 0)
            // Only gpsd's keys: its export segment (0x4770xxxx) and the NTP ones (NTP0..NTP7).
            let mine = (UInt32(bitPattern: key) & 0xFFFF_0000) == 0x4770_0000
                || (0x4E54_5030...0x4E54_5037).contains(key)
            if id >= 0, mine { _ = shmctl(id, IPC_RMID, nil) }
        }
    }

    private static func segments() -> [Int32: Int] {
        guard let text = try? String(contentsOfFile: "/proc/sysvipc/shm", encoding: .utf8) else { return [:] }
        var result: [Int32: Int] = [:]
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            if fields.count > 6, let key = Int32(fields[0]), let attached = Int(fields[6]) { result[key] = attached }
        }
        return result
    }
}
