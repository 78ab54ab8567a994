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

    @Option(name: .customLong("gpsd-reconnect-delay"), help: ArgumentHelp("Seconds before the first reconnection after gpsd went away; doubles on each failure (default 0.25).", valueName: "SEC"))
    public var reconnectDelay: Double?

    @Option(name: .customLong("gpsd-max-reconnect-delay"), help: ArgumentHelp("Longest delay between reconnections to gpsd (default 5).", valueName: "SEC"))
    public var maxReconnectDelay: Double?

    @Option(name: .customLong("gpsd-watchdog"), help: ArgumentHelp("Reconnect when gpsd sends nothing for this long (default 5).", valueName: "SEC"))
    public var watchdog: Double?

    /// Whether any gpsd flag was given.
    public var isSet: Bool {
        gpsd != nil || device != nil || reconnectDelay != nil || maxReconnectDelay != nil || watchdog != nil
    }

    /// Puts the flags' values into `settings`; an unparsable address or a bad delay is a usage error.
    public func apply(to settings: inout ServiceConfiguration) throws(CommandFailure) {
        if let device { settings.gpsdDevice = device }
        if let reconnectDelay { settings.gpsdReconnectDelay = reconnectDelay }
        if let maxReconnectDelay { settings.gpsdMaxReconnectDelay = maxReconnectDelay }
        if let watchdog { settings.gpsdWatchdog = watchdog }
        do throws(LocationError) {
            if let gpsd {
                let endpoint = try GPSDEndpoint(parsing: gpsd)
                settings.gpsdHost = endpoint.host
                settings.gpsdPort = endpoint.port
            }
            try settings.validate()
        } catch {
            throw CommandFailure.usage(error.message)
        }
    }
}
