import Foundation
import LocationCore
import LocationService
import LocationUplink
import Logging

/// An uplink as the shared receiver serves it: a manager of its own on a tap, running at the uplink's own
/// policy (every fix, or one every `interval` seconds as a background app with the background location mode
/// gets them), whose delivered fixes go into the uplink's outbox.
///
/// So a tracker that reports every 30 s costs what a background app costs, and the receiver runs at what the
/// apps and the uplinks need together.
///
/// The manager monitors the configured regions (`--region`, YAML `regions:`), and their events go to the
/// uplink too. Their states are saved beside the outbox (`uplinks/NAME.regions`) after each event, once the
/// uplink has the event in its own outbox, so a restart neither repeats an enter nor loses an exit.
final class UplinkConsumer: LocationManagerDelegate {
    let uplink: any Uplink
    let manager: LocationManager
    private let application: Application
    private let regionsPath: String?

    init(
        uplink: any Uplink, source: any LocationSource, settings: ServiceConfiguration, regionsPath: String?,
        logger: Logger
    ) throws(LocationError) {
        self.uplink = uplink
        self.regionsPath = regionsPath
        let endpoint = uplink.endpoint
        var configuration = settings.managerConfiguration
        // Nothing is held for an uplink: its outbox is where fixes wait.
        configuration.journalPath = nil
        configuration.allowsBackgroundLocationUpdates = true
        configuration.distanceFilter = endpoint.distance
        configuration.reduced.distanceFilter = endpoint.distance
        configuration.reduced.coarseningGrid = nil
        if endpoint.interval > 0 {
            configuration.reduced.interval = ValueRange.duration(clampingSeconds: endpoint.interval)
            configuration.reduced.desiredAccuracy = endpoint.accuracy ?? configuration.reduced.desiredAccuracy
        }
        application = Application(configuration: settings.applicationConfiguration)
        manager = try LocationManager(source: source, application: application, configuration: configuration)
        manager.delegate = self
        if let tracker = uplink as? MQTTUplink {
            tracker.answerReportsWith { [manager] in manager.location }
        }
        if let regionsPath { try Self.restoreRegions(of: manager, from: regionsPath, uplink: endpoint.name, logger: logger) }
        // Configured regions: new or changed ones are added; one monitored as configured keeps its state.
        let existing = Dictionary(manager.regionSnapshot.records.map { ($0.region.identifier, $0.region) }, uniquingKeysWith: { a, _ in a })
        for region in settings.regions where existing[region.identifier] != region { manager.startMonitoring(region) }
        let configured = Set(settings.regions.map(\.identifier))
        for record in manager.regionSnapshot.records where !configured.contains(record.region.identifier) {
            manager.stopMonitoring(record.region.identifier)
        }
        if let tracker = uplink as? HomeAssistantUplink {
            let snapshot = manager.regionSnapshot
            let inside = snapshot.records.filter { $0.state == .inside }
                .sorted { ($0.enteredAt ?? .distantPast, $0.region.identifier) < ($1.enteredAt ?? .distantPast, $1.region.identifier) }
            tracker.restoreZones(inside: inside.map(\.region.identifier))
        }
        saveRegions()
        try application.finishLaunching()
        // An interval is the background's duty cycle; without one the uplink runs as a foreground app does.
        try application.transition(to: endpoint.interval > 0 ? .background : .active)
    }

    /// Connects the uplink and starts its updates.
    func start() {
        uplink.start()
        manager.startUpdatingLocation()
    }

    /// Stops the updates and the uplink; what is not acknowledged stays in its outbox.
    func stop() async {
        manager.shutdown()
        await manager.waitForPendingDeliveries()
        uplink.stop()
    }

    func locationManager(_ manager: LocationManager, didReceive event: LocationEvent) {
        switch event {
        case .locations(let locations, _):
            for location in locations { uplink.take(location) }
        case .region(let event):
            uplink.take(event)
            saveRegions()
        case .motion(let event):
            uplink.take(event)
        default: break
        }
    }

    /// Writes the regions' states beside the outbox (atomically); removes the file when there are none.
    private func saveRegions() {
        guard let regionsPath else { return }
        RegionStateFile.save(manager.regionSnapshot, to: regionsPath)
    }

    /// Restores the states a previous run saved. A file this user may not read refuses the start (its states
    /// would be lost for good); one that is not of regions is logged and kept aside (`.damaged`), and the
    /// regions start unknown.
    private static func restoreRegions(
        of manager: LocationManager, from path: String, uplink name: String, logger: Logger
    ) throws(LocationError) {
        switch RegionStateFile.load(path) {
        case .absent: break
        case .snapshot(let snapshot): manager.restoreRegions(snapshot)
        case .denied(let reason):
            throw LocationError(
                .journalIO, "uplink \(name): cannot open its regions file \(path) (\(reason)); give it to this user (chown) or remove it")
        case .setAside(let reason):
            logger.error("uplink \(name): its regions file \(path) \(reason); it is kept as \(path).damaged and the regions start unknown")
        }
    }
}
