import Foundation
import LocationCore

/// Where every command of `locationctl` and `locationd` takes its settings from, in one place.
///
/// Each setting comes from the first of these that gives it:
/// 1. a command-line flag (applied by the command on top of what this returns),
/// 2. a `LOCATIOND_*` environment variable,
/// 3. the configuration file: `--config PATH` (which must exist), else ``userFile(environment:)`` if it
///    exists,
/// 4. the default.
package enum CommandSettings {
    /// The user's own configuration file, read when no `--config` is given:
    /// `$XDG_CONFIG_HOME/locationd/locationd.yaml`, else `$HOME/.config/locationd/locationd.yaml`.
    package static func userFile(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if let base = environment["XDG_CONFIG_HOME"], base.hasPrefix("/") { return base + "/locationd/locationd.yaml" }
        if let home = environment["HOME"], home.hasPrefix("/") { return home + "/.config/locationd/locationd.yaml" }
        return nil
    }

    /// The configuration file that applies: `explicit` (`--config`), else the user's file when it exists.
    package static func file(explicit: String?, environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if let explicit { return explicit }
        guard let user = userFile(environment: environment) else { return nil }
        // A missing user file is the common case and means "no file"; anything else there is read and checked.
        var info = stat()
        return lstat(user, &info) == 0 ? user : nil
    }

    /// Loads the defaults, then the configuration file, then the `LOCATIOND_*` variables; the caller applies
    /// its flags on top and validates.
    ///
    /// - Parameter config: `--config`, if given: it must exist (exit 66 otherwise).
    /// - Throws: 66 for a missing `--config` file, 64 for a bad file or value (naming where it came from).
    package static func load(
        config: String?, environment: [String: String] = ProcessInfo.processInfo.environment
    ) async throws(CommandFailure) -> ServiceConfiguration {
        if let config {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: config, isDirectory: &isDirectory) else {
                throw CommandFailure.missingInput("configuration file \(config) does not exist")
            }
            if isDirectory.boolValue { throw CommandFailure.missingInput("configuration file \(config) is a directory") }
        }
        do throws(LocationError) {
            return try await ServiceConfiguration.load(path: file(explicit: config, environment: environment), environment: environment)
        } catch {
            throw CommandFailure.usage(error.message)
        }
    }
}
