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

    /// Whether two paths name one file, whether or not it exists yet: the same after `.`, `..`, repeated
    /// slashes and symbolic links of the directories that exist are resolved.
    package static func sameFile(_ first: String, _ second: String) -> Bool {
        canonical(first) == canonical(second)
    }

    /// `path` with its existing directories resolved (`realpath`) and the rest cleaned lexically.
    package static func canonical(_ path: String) -> String {
        var absolute = path
        if !path.hasPrefix("/"), let directory = getcwd(nil, 0) {
            absolute = String(cString: directory) + "/" + path
            free(directory)
        }
        var parts: [Substring] = []
        for part in absolute.split(separator: "/") {
            switch part {
            case ".": continue
            case "..": if !parts.isEmpty { parts.removeLast() }
            default: parts.append(part)
            }
        }
        // The longest existing directory prefix is resolved, links included.
        for count in stride(from: parts.count - 1, through: 0, by: -1) {
            let prefix = "/" + parts[..<count].joined(separator: "/")
            guard let resolved = realpath(prefix, nil) else { continue }
            defer { free(resolved) }
            let head = String(cString: resolved)
            let rest = parts[count...].joined(separator: "/")
            return head == "/" ? "/" + rest : head + "/" + rest
        }
        return "/" + parts.joined(separator: "/")
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
