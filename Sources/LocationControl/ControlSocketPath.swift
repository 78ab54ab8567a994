import Foundation

/// Where locationd listens by default: the one place these paths are written.
public enum ControlSocketPath {
    /// The system service's socket, `/run/locationd/control.sock`.
    public static let system = "/run/locationd/control.sock"

    /// The socket of a daemon the user runs, `$XDG_RUNTIME_DIR/locationd/control.sock`; `nil` without
    /// `XDG_RUNTIME_DIR`.
    public static func user(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        guard let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty else { return nil }
        return runtime + "/locationd/control.sock"
    }
}
