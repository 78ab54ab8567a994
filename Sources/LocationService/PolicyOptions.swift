import ArgumentParser
import Foundation
import LocationControl
import LocationCore

/// The accuracy-policy knobs shared by `replay`, `watch` and `locationd`.
package struct PolicyOptions: ParsableArguments {
    /// Creates the options (ArgumentParser fills them in).
    package init() {}

    @Option(name: .customLong("distance-filter"), parsing: .unconditional, help: ArgumentHelp("Minimum metres between foreground deliveries (default: none, every fix; \(ValueRange.distance)).", valueName: "METRES"))
    package var distanceFilter: NumberArgument?

    @Option(name: .customLong("max-speed"), parsing: .unconditional, help: ArgumentHelp("Reject fixes that imply moving faster than this, beyond both fixes' accuracies (an outlier gate; default: none, every fix passes; \(ValueRange.speed)). 100 suits walking and driving.", valueName: "M/S"))
    package var maxSpeed: NumberArgument?

    @Option(name: .customLong("motion"), help: ArgumentHelp("Stationary detection: motion events when the receiver stops and moves again (default off).", valueName: "on|off"))
    package var motion: Switch?

    @Option(name: .customLong("pauses-when-stationary"), help: ArgumentHelp("Let the receiver rest while it stands still: one check every 30 s, back to every fix at the first check that has moved (implies --motion on; default off).", valueName: "on|off"))
    package var pausesWhenStationary: Switch?

    @Option(name: .customLong("while-stationary"), help: ArgumentHelp("With --motion on, what is delivered while still: centroid (each fix at where it stopped, default) or nothing.", valueName: "centroid|nothing"))
    package var whileStationary: String?

    @Option(name: .customLong("max-update-delay"), parsing: .unconditional, help: ArgumentHelp("Deferred delivery: live fixes are delivered together, as one batch, at most this many seconds after the oldest arrived (default: none, each as it comes; \(ValueRange.backgroundInterval)).", valueName: "SEC"))
    package var maxUpdateDelay: NumberArgument?

    @Option(name: .customLong("reduced-interval"), parsing: .unconditional, help: ArgumentHelp("Seconds between background acquisitions (default 60; \(ValueRange.backgroundInterval)).", valueName: "SEC"))
    package var reducedInterval: NumberArgument?

    @Option(name: .customLong("reduced-accuracy"), parsing: .unconditional, help: ArgumentHelp("Accuracy in metres that ends a background acquisition (default 100; \(ValueRange.distance)).", valueName: "METRES"))
    package var reducedAccuracy: NumberArgument?

    @Option(name: .customLong("reduced-distance"), parsing: .unconditional, help: ArgumentHelp("Minimum metres between background deliveries (default: the distance filter; \(ValueRange.distance)).", valueName: "METRES"))
    package var reducedDistance: NumberArgument?

    @Option(name: .customLong("background-location"), help: ArgumentHelp("The background location mode. on: a background or suspended app gets its reduced fixes live; off: from the moment it enters the background its fixes are held until it returns to the foreground (default off, as on iOS).", valueName: "on|off"))
    package var backgroundLocation: Switch?

    @Option(name: .customLong("config"), help: ArgumentHelp("YAML configuration file (every key: the commented /etc/locationd/locationd.yaml an install puts there; default $XDG_CONFIG_HOME/locationd/locationd.yaml if it exists). Flags win over LOCATIOND_* variables, which win over the file.", valueName: "PATH"))
    package var config: String?

    /// Loads the configuration as ``CommandSettings`` says (file, then environment), then applies the flags on top.
    package func resolve() async throws -> ServiceConfiguration {
        var configuration = try await CommandSettings.load(config: config)
        if let distanceFilter { configuration.distanceFilter = try distanceFilter.value(in: .distance, for: "--distance-filter") }
        if let reducedInterval {
            configuration.reducedInterval = try reducedInterval.value(in: .backgroundInterval, for: "--reduced-interval")
        }
        if let reducedAccuracy { configuration.reducedAccuracy = try reducedAccuracy.value(in: .distance, for: "--reduced-accuracy") }
        if let reducedDistance { configuration.reducedDistance = try reducedDistance.value(in: .distance, for: "--reduced-distance") }
        if let backgroundLocation { configuration.backgroundLocation = backgroundLocation == .on }
        if let maxSpeed { configuration.maxSpeed = try maxSpeed.value(in: .speed, for: "--max-speed") }
        if let motion { configuration.motion = motion == .on }
        if let pausesWhenStationary { configuration.pausesWhenStationary = pausesWhenStationary == .on }
        if let whileStationary {
            guard StationaryDelivery(rawValue: whileStationary) != nil else {
                throw CommandFailure.usage("--while-stationary '\(ValueRange.printable(whileStationary))' is neither centroid nor nothing")
            }
            configuration.whileStationary = whileStationary
        }
        if let maxUpdateDelay { configuration.maxUpdateDelay = try maxUpdateDelay.value(in: .backgroundInterval, for: "--max-update-delay") }
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

/// An app's own policy in locationd (`locationctl state --app NAME --reduced-interval …`): sent with the
/// `open` that names the app, so it changes that app's session and no other.
package struct AppPolicyOptions: ParsableArguments {
    /// Creates the options (ArgumentParser fills them in).
    package init() {}

    @Option(name: .customLong("reduced-interval"), parsing: .unconditional, help: ArgumentHelp("The app's seconds between background acquisitions (\(ValueRange.backgroundInterval)).", valueName: "SEC"))
    package var reducedInterval: NumberArgument?

    @Option(name: .customLong("reduced-accuracy"), parsing: .unconditional, help: ArgumentHelp("The app's accuracy in metres that ends a background acquisition (\(ValueRange.distance)); a fix of unknown accuracy never meets it, so each acquisition then lasts its whole timeout.", valueName: "METRES"))
    package var reducedAccuracy: NumberArgument?

    @Option(name: .customLong("background-location"), help: ArgumentHelp("The app's background location mode. on: in the background or suspended it gets its reduced fixes live; off: they are held until it returns to the foreground.", valueName: "on|off"))
    package var backgroundLocation: Switch?

    @Option(name: .customLong("updates"), help: ArgumentHelp("off stops the app's updates (the receiver is switched off when no app wants any); on starts them again.", valueName: "on|off"))
    package var updates: Switch?

    /// The settings given, or nil when none was.
    package func policy() throws(CommandFailure) -> AppPolicy? {
        guard reducedInterval != nil || reducedAccuracy != nil || backgroundLocation != nil || updates != nil else { return nil }
        var policy = AppPolicy(backgroundLocation: backgroundLocation.map { $0 == .on }, updates: updates.map { $0 == .on })
        policy.reducedInterval = try reducedInterval?.value(in: .backgroundInterval, for: "--reduced-interval")
        policy.reducedAccuracy = try reducedAccuracy?.value(in: .distance, for: "--reduced-accuracy")
        return policy
    }
}
