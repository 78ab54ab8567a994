import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The project's own executables (`locationctl`, `locationd`), looked up next to the running benchmark in
/// the same build folder.
package enum SiblingExecutable {
    /// The path of `name` next to the running executable, or nil when it has not been built.
    package static func path(_ name: String) -> String? {
        let directory = URL(fileURLWithPath: GPXReadChild.executablePath).deletingLastPathComponent()
        let path = directory.appendingPathComponent(name).path
        return access(path, X_OK) == 0 ? path : nil
    }
}
