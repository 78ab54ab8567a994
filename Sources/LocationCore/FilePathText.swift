#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the package does with file paths as text, written once.
package enum FilePathText {
    /// The directory a path names its file in: `"/"` for a file at the root, `"."` for a bare name.
    package static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// Makes a rename or a creation in the directory of `path` durable (an `fsync` of the directory);
    /// quietly does nothing when the directory cannot be opened.
    package static func syncDirectory(containing path: String) {
        let fd = open(parent(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        _ = close(fd)
    }
}
