import ArgumentParser
import LocationCore
import LocationService

/// The accuracy-policy knobs shared by `replay`, `watch` and `locationd`.
public struct PolicyOptions: ParsableArguments {
    /// Creates the options (ArgumentParser fills them in).
    public init() {}

    @Option(name: .customLong("reduced-interval"), help: ArgumentHelp("Seconds between background acquisitions (default 60).", valueName: "SEC"))
    public var reducedInterval: Double?

    @Option(name: .customLong("reduced-accuracy"), help: ArgumentHelp("Accuracy in metres that ends a background acquisition (default 100).", valueName: "METRES"))
    public var reducedAccuracy: Double?

    @Option(name: .customLong("reduced-distance"), help: ArgumentHelp("Minimum metres between background deliveries (default: none).", valueName: "METRES"))
    public var reducedDistance: Double?

    @Option(name: .customLong("background-location"), help: ArgumentHelp("on: a background app keeps live reduced updates; off: it is suspended after the grace period and fixes are held (default on).", valueName: "on|off"))
    public var backgroundLocation: Switch?

    @Option(name: .customLong("config"), help: ArgumentHelp("YAML configuration file for everything else (see Config/locationd.yaml).", valueName: "PATH"))
    public var config: String?

    /// Loads the configuration file (if any), then applies the flags on top.
    public func resolve() async throws -> ServiceConfiguration {
        var configuration = try await ServiceConfiguration.load(path: config)
        if let reducedInterval { configuration.reducedInterval = reducedInterval }
        if let reducedAccuracy { configuration.reducedAccuracy = reducedAccuracy }
        if let reducedDistance { configuration.reducedDistance = reducedDistance }
        if let backgroundLocation { configuration.backgroundLocation = backgroundLocation == .on }
        try configuration.validate()
        return configuration
    }
}

/// `on` or `off`.
public enum Switch: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// Enabled.
    case on
    /// Disabled.
    case off
}

extension OutputFormat: ExpressibleByArgument {}
extension AccuracyPolicy: ExpressibleByArgument {}
