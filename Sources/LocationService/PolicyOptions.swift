import ArgumentParser
import Foundation
import LocationCore

/// The accuracy-policy knobs shared by `replay`, `watch` and `locationd`.
package struct PolicyOptions: ParsableArguments {
    /// Creates the options (ArgumentParser fills them in).
    package init() {}

    @Option(name: .customLong("reduced-interval"), parsing: .unconditional, help: ArgumentHelp("Seconds between background acquisitions (default 60; \(ValueRange.backgroundInterval)).", valueName: "SEC"))
    package var reducedInterval: NumberArgument?

    @Option(name: .customLong("reduced-accuracy"), parsing: .unconditional, help: ArgumentHelp("Accuracy in metres that ends a background acquisition (default 100; \(ValueRange.distance)).", valueName: "METRES"))
    package var reducedAccuracy: NumberArgument?

    @Option(name: .customLong("reduced-distance"), parsing: .unconditional, help: ArgumentHelp("Minimum metres between background deliveries (default: none; \(ValueRange.distance)).", valueName: "METRES"))
    package var reducedDistance: NumberArgument?

    @Option(name: .customLong("background-location"), help: ArgumentHelp("The background location mode. on: a background or suspended app gets its reduced fixes live; off: from the moment it enters the background its fixes are held until it returns to the foreground (default off, as on iOS).", valueName: "on|off"))
    package var backgroundLocation: Switch?

    @Option(name: .customLong("config"), help: ArgumentHelp("YAML configuration file (see Config/locationd.yaml; default $XDG_CONFIG_HOME/locationd/locationd.yaml if it exists). Flags win over LOCATIOND_* variables, which win over the file.", valueName: "PATH"))
    package var config: String?

    /// Loads the configuration as ``CommandSettings`` says (file, then environment), then applies the flags on top.
    package func resolve() async throws -> ServiceConfiguration {
        var configuration = try await CommandSettings.load(config: config)
        if let reducedInterval {
            configuration.reducedInterval = try reducedInterval.value(in: .backgroundInterval, for: "--reduced-interval")
        }
        if let reducedAccuracy { configuration.reducedAccuracy = try reducedAccuracy.value(in: .distance, for: "--reduced-accuracy") }
        if let reducedDistance { configuration.reducedDistance = try reducedDistance.value(in: .distance, for: "--reduced-distance") }
        if let backgroundLocation { configuration.backgroundLocation = backgroundLocation == .on }
        do throws(LocationError) { try configuration.validate() } catch { throw CommandFailure.usage(error.message) }
        return configuration
    }
}

/// `on` or `off`.
package enum Switch: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// Enabled.
    case on
    /// Disabled.
    case off
}

extension AccuracyPolicy: ExpressibleByArgument {}
