import LocationControl
import ArgumentParser
import Foundation
import LocationService

/// The control socket(s) a client tries, in order, and why.
///
/// `--socket` names one socket and nothing else is tried. Otherwise `LOCATIOND_SOCKET` or the configuration
/// file's `socket` names one. With none of them, the client tries the user's own daemon
/// (`$XDG_RUNTIME_DIR/locationd/control.sock`) and then the system service's (`/run/locationd/control.sock`).
package struct ControlSocketChoice: Sendable, Hashable {
    /// Where the choice came from.
    package enum Origin: String, Sendable, Hashable {
        /// `--socket`.
        case flag
        /// `LOCATIOND_SOCKET`.
        case environment
        /// The configuration file's `socket` key.
        case configurationFile = "configuration file"
        /// The user's socket, then the system one.
        case defaults
    }

    /// The system service's socket (see `Config/locationd.service`).
    package static let systemSocket = ControlSocketPath.system

    /// The sockets to try, in order; never empty.
    package let candidates: [String]
    /// Where they came from.
    package let origin: Origin

    /// Whether the user named the socket with `--socket`: then it is the only one, and a daemon that cannot be
    /// reached there is an error, never a reason to go elsewhere.
    package var isExplicit: Bool { origin == .flag }

    /// Creates a choice.
    package init(candidates: [String], origin: Origin) {
        self.candidates = candidates
        self.origin = origin
    }

    /// The choice for a client: `flag` (`--socket`) wins, then the configuration's `socket` (set by
    /// `LOCATIOND_SOCKET` or the file), then the user's socket followed by the system one.
    package static func resolve(
        flag: String?, settings: ServiceConfiguration, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> ControlSocketChoice {
        if let flag { return ControlSocketChoice(candidates: [flag], origin: .flag) }
        if let configured = settings.configuredSocketPath {
            let fromEnvironment = environment["LOCATIOND_SOCKET"].map { !$0.isEmpty } ?? false
            return ControlSocketChoice(candidates: [configured], origin: fromEnvironment ? .environment : .configurationFile)
        }
        var candidates: [String] = []
        if let user = ControlSocketPath.user(environment: environment) { candidates.append(user) }
        if !candidates.contains(systemSocket) { candidates.append(systemSocket) }
        return ControlSocketChoice(candidates: candidates, origin: .defaults)
    }
}

/// `--config`, `--socket` and `--app` for the commands that talk to locationd about an app (`current`,
/// `state`, `status`).
package struct DaemonOptions: ParsableArguments {
    /// Creates the options (ArgumentParser fills them in).
    package init() {}

    /// `--socket` and `--config`.
    @OptionGroup package var connection: DaemonSocketOptions

    /// `--socket`: the only socket tried when given.
    package var socket: String? { connection.socket }
    /// `--config`: the configuration file, instead of the user's.
    package var config: String? { connection.config }

    @Option(help: ArgumentHelp(
        "The app to act on: its own lifecycle state, policy, held fixes and events in locationd, created when the state command first sets a state or policy for it (or region add a region), and then yours alone. Without it: the app every client shares, named default.",
        valueName: "NAME"))
    /// `--app`: the app the requests act on; `nil` is `default`.
    package var app: String?

    /// Checks `--app`: letters, digits, '.', '_' and '-', at most 64, not starting with '.' or '-'.
    package func validate() throws {
        guard let app else { return }
        do throws(ControlError) { try ControlRequest.checkApp(app) } catch {
            throw ValidationError("--app: " + error.message.replacingOccurrences(of: "\"app\" ", with: ""))
        }
    }

    /// The settings (``CommandSettings``: file, then environment) and the sockets to try.
    package func resolve() async throws(CommandFailure) -> (settings: ServiceConfiguration, sockets: ControlSocketChoice) {
        try await connection.resolve()
    }
}

/// `--config` and `--socket`: which locationd to talk to. Alone for the commands about locationd as a whole
/// (`apps`), which name no app.
package struct DaemonSocketOptions: ParsableArguments {
    /// Creates the options (ArgumentParser fills them in).
    package init() {}

    @Option(help: ArgumentHelp(
        "locationd's control socket; nothing else is tried. Default: LOCATIOND_SOCKET, else the configuration's socket, else $XDG_RUNTIME_DIR/locationd/control.sock and then /run/locationd/control.sock.",
        valueName: "PATH"))
    /// `--socket`: the only socket tried when given.
    package var socket: String?

    @Option(name: .customLong("config"), help: ArgumentHelp("YAML configuration file (every key: the commented /etc/locationd/locationd.yaml an install puts there; default $XDG_CONFIG_HOME/locationd/locationd.yaml if it exists).", valueName: "PATH"))
    /// `--config`: the configuration file, instead of the user's.
    package var config: String?

    /// The settings (``CommandSettings``: file, then environment) and the sockets to try.
    package func resolve() async throws(CommandFailure) -> (settings: ServiceConfiguration, sockets: ControlSocketChoice) {
        let settings = try await CommandSettings.load(config: config)
        return (settings, ControlSocketChoice.resolve(flag: socket, settings: settings))
    }
}
