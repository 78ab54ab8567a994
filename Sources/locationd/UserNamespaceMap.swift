import Foundation

/// Which users the daemon's user namespace can tell apart, from `/proc/self/uid_map`.
///
/// In a namespace that maps only some users (systemd's `PrivateUsers=yes` maps root and the service's own
/// user), the kernel reports every other user, over SO_PEERCRED too, as the overflow uid (65534): every member
/// of the socket group would look like one user, and reach the others' apps. Such a peer is refused instead.
/// A namespace that maps some users cannot tell a real `nobody` from an unmapped user, so it refuses both.
struct UserNamespaceMap: Sendable, Equatable {
    /// Whether every user id is mapped: the initial namespace, or one whose map covers the whole range.
    let mapsEveryone: Bool
    /// The uid the kernel gives a user the namespace does not map.
    let overflowUID: UInt32

    /// The map of this process's namespace; one that cannot be read counts as mapping everyone (a kernel
    /// without user namespaces).
    static func current() -> UserNamespaceMap {
        let map = try? String(contentsOfFile: "/proc/self/uid_map", encoding: .utf8)
        let overflow = (try? String(contentsOfFile: "/proc/sys/kernel/overflowuid", encoding: .utf8))
            .flatMap { UInt32($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 65534
        return UserNamespaceMap(uidMap: map, overflowUID: overflow)
    }

    /// The map described by the text of a `uid_map` (lines of inside id, outside id and count); `nil` text
    /// maps everyone.
    init(uidMap: String?, overflowUID: UInt32) {
        self.overflowUID = overflowUID
        guard let uidMap else {
            mapsEveryone = true
            return
        }
        var mapped: UInt64 = 0
        for line in uidMap.split(separator: "\n") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if fields.count == 3, let count = UInt64(fields[2]) { mapped += count }
        }
        // The initial namespace maps 4294967295 ids (every one but (uid_t)-1).
        mapsEveryone = mapped >= UInt64(UInt32.max)
    }

    /// Whether a peer reported as `uid` may be any of several users the namespace does not map.
    func isUnmapped(_ uid: UInt32) -> Bool {
        !mapsEveryone && uid == overflowUID
    }
}
