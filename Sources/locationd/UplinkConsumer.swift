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
final class UplinkConsumer: LocationManagerDelegate {
    let uplink: any Uplink
    let manager: LocationManager
    private let application: Application

    init(uplink: any Uplink, source: any LocationSource, settings: ServiceConfiguration) throws(LocationError) {
        self.uplink = uplink
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
        guard case .locations(let locations, _) = event else { return }
        for location in locations { uplink.take(location) }
    }
}
