import ArgumentParser
import LocationCore
import LocationService

/// The accuracy-policy knobs shared by `replay`, `watch` and `locationd`.
struct PolicyOptions: ParsableArguments {
    @Option(name: .customLong("reduced-interval"), help: ArgumentHelp("Seconds between background acquisitions (default 60).", valueName: "SEC"))
    var reducedInterval: Double?

    @Option(name: .customLong("reduced-accuracy"), help: ArgumentHelp("Accuracy in metres that ends a background acquisition (default 100).", valueName: "METRES"))
    var reducedAccuracy: Double?

    @Option(name: .customLong("reduced-distance"), help: ArgumentHelp("Minimum metres between background deliveries (default: none).", valueName: "METRES"))
    var reducedDistance: Double?

    @Option(name: .customLong("background-location"), help: ArgumentHelp("on: a background app keeps live reduced updates; off: it is suspended after the grace period and fixes are held (default on).", valueName: "on|off"))
    var backgroundLocation: Switch?

    @Option(name: .customLong("config"), help: ArgumentHelp("YAML configuration file for everything else (see Config/locationd.yaml).", valueName: "PATH"))
    var config: String?

    /// Loads the configuration file (if any), then applies the flags on top.
    func resolve() async throws -> ServiceConfiguration {
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
enum Switch: String, ExpressibleByArgument, CaseIterable {
    case on, off
}

extension OutputFormat: ExpressibleByArgument {}
extension AccuracyPolicy: ExpressibleByArgument {}
