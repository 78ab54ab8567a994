import ArgumentParser
import LocationCore
import LocationService

/// The gpsd flags shared by `locationctl watch` and `locationd`.
public struct GPSDOptions: ParsableArguments {
    /// Creates the options (ArgumentParser fills them in).
    public init() {}

    @Option(help: ArgumentHelp("Read gpsd at this address (default: the configuration's, else localhost:2947).", valueName: "HOST[:PORT]"))
    public var gpsd: String?

    @Option(help: ArgumentHelp("Watch only this receiver device.", valueName: "PATH"))
    public var device: String?

    /// Whether either flag was given.
    public var isSet: Bool { gpsd != nil || device != nil }

    /// Puts the flags' address and device into `settings`; an unparsable address is a usage error.
    public func apply(to settings: inout ServiceConfiguration) throws(CommandFailure) {
        if let device { settings.gpsdDevice = device }
        guard let gpsd else { return }
        do throws(LocationError) {
            let endpoint = try GPSDEndpoint(parsing: gpsd)
            settings.gpsdHost = endpoint.host
            settings.gpsdPort = endpoint.port
        } catch {
            throw CommandFailure.usage(error.message)
        }
    }
}
