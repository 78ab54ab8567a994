import ArgumentParser
import LocationCore

/// The gpsd flags shared by `locationctl watch` and `locationd`.
package struct GPSDOptions: ParsableArguments {
    /// Creates the options (ArgumentParser fills them in).
    package init() {}

    @Option(help: ArgumentHelp("Read gpsd at this address (default: the configuration's, else localhost:2947).", valueName: "HOST[:PORT]"))
    package var gpsd: String?

    @Option(help: ArgumentHelp("Watch only this receiver device.", valueName: "PATH"))
    package var device: String?

    @Option(name: .customLong("gpsd-reconnect-delay"), parsing: .unconditional, help: ArgumentHelp("Seconds before the first reconnection after gpsd went away; doubles on each failure (default 0.25; \(ValueRange.reconnectDelay)).", valueName: "SEC"))
    package var reconnectDelay: NumberArgument?

    @Option(name: .customLong("gpsd-max-reconnect-delay"), parsing: .unconditional, help: ArgumentHelp("Longest delay between reconnections to gpsd (default 5; \(ValueRange.reconnectDelay)).", valueName: "SEC"))
    package var maxReconnectDelay: NumberArgument?

    @Option(name: .customLong("gpsd-watchdog"), parsing: .unconditional, help: ArgumentHelp("Reconnect when gpsd sends nothing for this long (default 5; \(ValueRange.watchdog)).", valueName: "SEC"))
    package var watchdog: NumberArgument?

    @Option(name: .customLong("gpsd-epoch-settle"), parsing: .unconditional, help: ArgumentHelp("Longest wait for more of an epoch's reports while the receiver's pattern is not known yet (default 0.5; \(ValueRange.epochSettle)).", valueName: "SEC"))
    package var epochSettle: NumberArgument?

    /// Whether any gpsd flag was given.
    package var isSet: Bool {
        gpsd != nil || device != nil || reconnectDelay != nil || maxReconnectDelay != nil || watchdog != nil || epochSettle != nil
    }

    /// Puts the flags' values into `settings`; an unparsable address or a bad delay is a usage error.
    package func apply(to settings: inout ServiceConfiguration) throws(CommandFailure) {
        if let device { settings.gpsdDevice = device }
        if let reconnectDelay {
            settings.gpsdReconnectDelay = try reconnectDelay.value(in: .reconnectDelay, for: "--gpsd-reconnect-delay")
        }
        if let maxReconnectDelay {
            settings.gpsdMaxReconnectDelay = try maxReconnectDelay.value(in: .reconnectDelay, for: "--gpsd-max-reconnect-delay")
        }
        if let watchdog { settings.gpsdWatchdog = try watchdog.value(in: .watchdog, for: "--gpsd-watchdog") }
        if let epochSettle { settings.gpsdEpochSettle = try epochSettle.value(in: .epochSettle, for: "--gpsd-epoch-settle") }
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
