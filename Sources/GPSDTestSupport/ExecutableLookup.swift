import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Finds the programs tests and benchmarks start (gpsd, gpsfake, gpspipe, python3, ...).
///
/// A name is looked up on `PATH` first, then in the usual system folders, which a user's `PATH` often
/// lacks (`gpsd` is in `/usr/sbin`); a name with a slash is taken as a path.
public enum ExecutableLookup {
    /// Folders searched after `PATH`.
    public static let systemFolders = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]

    /// The path of the executable `name`, or nil when there is none.
    public static func path(of name: String) -> String? {
        if name.contains("/") { return isExecutable(name) ? name : nil }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let folders = path.split(separator: ":").map(String.init) + systemFolders
        return folders.lazy.map { "\($0)/\(name)" }.first(where: isExecutable)
    }

    /// gpsd, when it is installed.
    public static var gpsd: String? { path(of: "gpsd") }

    /// gpsfake (Debian's python3-gps), when it is installed.
    public static var gpsfake: String? { path(of: "gpsfake") }

    private static func isExecutable(_ path: String) -> Bool {
        var status = stat()
        return access(path, X_OK) == 0 && stat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG
    }
}
