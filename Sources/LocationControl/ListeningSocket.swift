import Foundation
import LocationCore

#if canImport(Glibc)
    import Glibc
#endif

/// A Unix stream socket listening at a path that only those meant to may connect to: the control socket's,
/// and any other locationd serves (the NMEA socket).
///
/// Made in this order so that nobody else can ever connect or take its place: the socket's own directory
/// created 0700 when missing (0750 for a group); a directory others may write refused (unless sticky and
/// trusted, as /tmp); a stale socket nobody answers on replaced, a live one or a non-socket file refused;
/// the socket bound 0600, given to the group and made 0660 when there is one, and only then listening.
package struct ListeningSocket: Sendable {
    /// The listening descriptor (non-blocking, close-on-exec).
    package let descriptor: Int32
    /// The socket path.
    package let path: String
    /// The socket file's device and inode, so that removal takes this file and never a successor's.
    package let identity: (device: UInt64, inode: UInt64)

    /// Makes the socket and listens.
    ///
    /// With `trustedDirectoryOnly` the socket's directory must be owned by root or this user and be
    /// writable by nobody else, sticky or not: for a socket whose readers cannot tell an impostor (GeoClue
    /// takes whatever the NMEA socket says), /tmp is no place.
    ///
    /// - Throws: ``ControlError`` naming the path and the reason: `path-too-long`, `permission-denied`,
    ///   `unsafe-directory`, `already-listening`, `address-in-use` (a non-socket file is in the way), or `io`.
    package init(path: String, group: UInt32?, trustedDirectoryOnly: Bool = false) throws(ControlError) {
        self.path = path
        try UnixSocket.withAddress(path) { _, _ in }
        let createdDirectory = try Self.createParentDirectory(of: path)
        do throws(ControlError) {
            if let group {
                if let createdDirectory {
                    try Self.shareDirectory(createdDirectory, with: group, path: path)
                } else if let own = Self.ownDirectory(of: path), !Self.lets(group, through: own.info) {
                    // The socket's own directory from an earlier run without the group (or one that failed):
                    // it holds nothing else, so it is given to the group as a new one would be.
                    try Self.shareDirectory(own.path, with: group, path: path)
                }
            }
            try Self.checkDirectoryIsPrivate(of: path, strictly: trustedDirectoryOnly)
            if let group { try Self.checkGroupCanReach(path, group: group) }
            try Self.removeStaleSocket(at: path)
        } catch {
            // A directory made for a socket that was never made goes again.
            if let createdDirectory { rmdir(createdDirectory) }
            throw error
        }

        let fd = try UnixSocket.makeStreamSocket(nonBlocking: true, path: path)
        // The file bind creates takes its mode from the socket inode: make it owner-only before it exists.
        _ = fchmod(fd, 0o600)
        let bound = try UnixSocket.withAddress(path) { address, length in bind(fd, address, length) }
        guard bound == 0 else {
            let number = errno
            close(fd)
            throw ControlError.system("bind", path: path, errno: number)
        }
        var info = stat()
        // chmod again before listen in case the platform ignored fchmod; nobody can connect before listen.
        guard chmod(path, 0o600) == 0, stat(path, &info) == 0 else {
            let number = errno
            close(fd)
            unlink(path)
            throw ControlError.system("set permissions on", path: path, errno: number)
        }
        // The group is given while the socket is still owner-only and not listening, so no one outside the
        // group can ever connect: chown first, then open it to the group.
        if let group = group {
            // Already the group's (the daemon's own group): no chown, which a sandbox may forbid.
            guard info.st_gid == gid_t(group) || chown(path, uid_t.max, gid_t(group)) == 0 else {
                let number = errno
                close(fd)
                unlink(path)
                throw ControlError(
                    number == EPERM || number == EACCES ? .permissionDenied : .io,
                    "cannot give socket \(path) to group \(Self.groupName(group)): \(String(cString: strerror(number))) "
                        + "(the daemon must run as root or as a member of that group)")
            }
            guard chmod(path, 0o660) == 0 else {
                let number = errno
                close(fd)
                unlink(path)
                throw ControlError.system("set permissions on", path: path, errno: number)
            }
        }
        guard listen(fd, SOMAXCONN) == 0 else {
            let number = errno
            close(fd)
            unlink(path)
            throw ControlError.system("listen on", path: path, errno: number)
        }
        descriptor = fd
        identity = (UInt64(info.st_dev), UInt64(info.st_ino))
    }

    /// Closes the listener and removes the socket file if it is still this one.
    package func closeAndRemove() {
        Self.closeAndRemove(descriptor, path: path, identity: identity)
    }

    /// Closes `descriptor` and removes `path` if it is still the file of `identity`.
    package static func closeAndRemove(_ descriptor: Int32, path: String, identity: (device: UInt64, inode: UInt64)) {
        close(descriptor)
        var info = stat()
        if lstat(path, &info) == 0, UInt64(info.st_dev) == identity.device, UInt64(info.st_ino) == identity.inode {
            unlink(path)
        }
    }

    /// Creates the socket's own directory with mode 0700 when it is missing (`locationd/` in
    /// `$XDG_RUNTIME_DIR` or `/run`); the directory above it must exist: a mistyped path creates nothing.
    ///
    /// - Returns: The socket's own directory when this call created it, else `nil`.
    static func createParentDirectory(of path: String) throws(ControlError) -> String? {
        try checkPlace(of: path)
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return nil }
        let parent = String(path[..<slash])
        guard mkdir(parent, 0o700) != 0 else { return parent }
        let number = errno
        guard number != EEXIST else { return nil }
        throw ControlError(
            number == EACCES || number == EPERM ? .permissionDenied : .io,
            "cannot create directory \(parent) for socket \(path): \(String(cString: strerror(number)))")
    }

    /// Refuses, before anything is made, a socket path that names a directory (`DIR/`, `DIR/.`: DIR would be
    /// created and then found in the socket's place), whose own directory could not be created because
    /// the one above it is missing (a mistyped path), or whose directory exists and others may write. `locationd --check-config` asks the same.
    package static func checkPlace(of path: String, group: UInt32? = nil, trustedDirectoryOnly: Bool = false) throws(ControlError) {
        let last = path.split(separator: "/").last
        guard !path.hasSuffix("/"), last != ".", last != ".." else {
            let directory = path.hasSuffix("/") ? String(path.dropLast()) : path
            throw ControlError(.io, "\(path) names a directory; a socket path ends in a file name, such as \(directory)/locationd.sock")
        }
        var existing = stat()
        if lstat(path, &existing) == 0, existing.st_mode & S_IFMT != S_IFSOCK {
            throw ControlError(.addressInUse, "\(path) exists and is not a socket; remove it or choose another socket path")
        }
        if let group, geteuid() != 0, !isMember(of: group) {
            throw ControlError(
                .permissionDenied,
                "cannot give socket \(path) to group \(groupName(group)): this user is not a member of it (the daemon must run as root or as a member of that group)")
        }
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return }
        let parent = String(path[..<slash])
        // An existing directory must be fit already: the start would refuse it.
        if access(parent, F_OK) == 0 {
            try checkDirectoryIsPrivate(of: path, strictly: trustedDirectoryOnly)
            // The socket's own directory is given to the group at start; any other must let it through.
            if let group, ownDirectory(of: path) == nil { try checkGroupCanReach(path, group: group) }
            return
        }
        let grandparent = parent.lastIndex(of: "/").map { $0 == parent.startIndex ? "/" : String(parent[..<$0]) } ?? "."
        guard access(grandparent, F_OK) != 0 else {
            if let group { try checkGroupCanReach(parent, group: group) }
            return
        }
        throw ControlError(
            .io,
            "cannot create directory \(parent) for socket \(path): \(grandparent) does not exist either; locationd creates only the socket's own directory")
    }

    /// Whether this process belongs to `group` (its effective group or a supplementary one).
    static func isMember(of group: UInt32) -> Bool {
        if getegid() == gid_t(group) { return true }
        let count = getgroups(0, nil)
        guard count > 0 else { return false }
        var groups = [gid_t](repeating: 0, count: Int(count))
        let filled = getgroups(count, &groups)
        return filled > 0 && groups.prefix(Int(filled)).contains(gid_t(group))
    }

    /// Lets `group` into a socket directory this server created (0750, owned by the group): members must
    /// be able to reach the socket, and still none of them may write there.
    private static func shareDirectory(_ directory: String, with group: UInt32, path: String) throws(ControlError) {
        var info = stat()
        let alreadyTheGroups = stat(directory, &info) == 0 && info.st_gid == gid_t(group)
        guard alreadyTheGroups || chown(directory, uid_t.max, gid_t(group)) == 0, chmod(directory, 0o750) == 0 else {
            let number = errno
            throw ControlError(
                number == EPERM || number == EACCES ? .permissionDenied : .io,
                "cannot give directory \(directory) of socket \(path) to group \(groupName(group)): "
                    + "\(String(cString: strerror(number))) (the daemon must run as root or as a member of that group)")
        }
    }

    /// A group's name and number for messages, such as `locationd (gid 998)`.
    static func groupName(_ group: UInt32) -> String {
        let name = getgrgid(gid_t(group)).flatMap { $0.pointee.gr_name.map { String(cString: $0) } }
        return name.map { "\($0) (gid \(group))" } ?? "gid \(group)"
    }

    /// Whether members of `group` may pass through a directory: its group's bits when it is the group's
    /// (even when others may pass: the kernel takes the group's bits for members), else the others' bits.
    static func lets(_ group: UInt32, through info: stat) -> Bool {
        info.st_gid == gid_t(group) ? info.st_mode & S_IXGRP != 0 : info.st_mode & S_IXOTH != 0
    }

    /// The socket's directory, when it is its own: owned by this user and holding nothing but the socket
    /// (or nothing at all).
    static func ownDirectory(of path: String) -> (path: String, info: stat)? {
        let parent = FilePathText.parent(of: path)
        let name = String(path.split(separator: "/").last ?? "")
        var info = stat()
        guard lstat(parent, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == geteuid(),
            let directory = opendir(parent)
        else { return nil }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let entryName = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if entryName != ".", entryName != "..", entryName != name { return nil }
        }
        return (parent, info)
    }

    /// Refuses a socket for a group whose members could not reach it: a 0660 socket in a directory they may
    /// not pass through (the control socket's 0700 directory, a home directory) serves nobody of the group,
    /// which would otherwise show only as the group's programs failing to connect.
    static func checkGroupCanReach(_ path: String, group: UInt32) throws(ControlError) {
        guard let resolved = realpath(FilePathText.parent(of: path), nil) else { return }
        var directory = String(cString: resolved)
        free(resolved)
        while true {
            var info = stat()
            if stat(directory, &info) == 0 {
                guard lets(group, through: info) else {
                    throw ControlError(
                        .permissionDenied,
                        "members of group \(groupName(group)) could not reach socket \(path): directory \(directory) "
                            + "(mode \(String(info.st_mode & 0o7777, radix: 8)), group \(groupName(UInt32(info.st_gid)))) does not let them through; "
                            + "put the socket in a directory of its own, which locationd creates for the group, inside "
                            + "directories others may pass through (mode 0711 or 0751)")
                }
            }
            guard directory != "/" else { return }
            directory = FilePathText.parent(of: directory)
        }
    }

    /// Refuses a socket directory that other users may write, unless it is sticky and owned by root or by
    /// this user (as /tmp is): in such a directory another user could rename the socket away and bind their
    /// own in its place, and clients would talk to an impostor.
    static func checkDirectoryIsPrivate(of path: String, strictly: Bool = false) throws(ControlError) {
        let parent = FilePathText.parent(of: path)
        var info = stat()
        guard stat(parent, &info) == 0 else { throw ControlError.system("inspect the directory of", path: path, errno: errno) }
        let writableByOthers = info.st_mode & (S_IWGRP | S_IWOTH) != 0
        let sticky = info.st_mode & S_ISVTX != 0
        let trustedOwner = info.st_uid == 0 || info.st_uid == getuid() || info.st_uid == geteuid()
        if strictly {
            guard trustedOwner, !writableByOthers else {
                throw ControlError(
                    .unsafeDirectory,
                    "the socket directory \(parent) (mode \(String(info.st_mode & 0o7777, radix: 8)), owner uid \(info.st_uid)) may be changed by "
                        + "someone other than root and this user, who could put a socket of their own in its place, and its readers "
                        + "would believe it; use a directory of this user's that only it can write, such as /run/locationd/nmea")
            }
            return
        }
        guard !writableByOthers || (sticky && trustedOwner) else {
            throw ControlError(
                .unsafeDirectory,
                "the socket directory \(parent) may be written by other users (mode \(String(info.st_mode & 0o7777, radix: 8))), "
                    + "who could replace the socket with their own; use a directory only its owner can write (chmod 700)")
        }
    }

    /// Removes a socket file nobody answers on; refuses to touch a live server's socket or a non-socket file.
    private static func removeStaleSocket(at path: String) throws(ControlError) {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            if errno == ENOENT { return }
            throw ControlError.system("inspect", path: path, errno: errno)
        }
        guard (info.st_mode & S_IFMT) == S_IFSOCK else {
            throw ControlError(
                .addressInUse, "\(path) exists and is not a socket; remove it or choose another socket path")
        }
        let probe = try UnixSocket.makeStreamSocket(nonBlocking: true, path: path)
        defer { close(probe) }
        let result = try UnixSocket.withAddress(path) { address, length in connect(probe, address, length) }
        let number = errno
        if result == 0 || number == EAGAIN || number == EINPROGRESS {
            throw ControlError(.alreadyListening, "another locationd is listening on \(path)")
        }
        guard number == ECONNREFUSED else {
            throw ControlError.system("probe the existing socket", path: path, errno: number)
        }
        guard unlink(path) == 0 || errno == ENOENT else {
            throw ControlError.system("remove the stale socket", path: path, errno: errno)
        }
    }
}
