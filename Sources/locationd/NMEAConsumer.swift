import Foundation
import LocationControl
import LocationCore
import LocationService
import Logging

/// The NMEA socket as the shared receiver serves it: a manager of its own on a tap, in the foreground (every
/// fix the receiver makes), running only while someone is connected, whose fixes go to every connection as
/// NMEA sentences.
///
/// So GeoClue's clients get the receiver's every fix while they want a position (GeoClue connects when the
/// first of them starts and stays connected while it runs), and a configured socket nobody reads costs
/// nothing: the receiver rests as the apps let it.
final class NMEAConsumer: LocationManagerDelegate {
    let server: NMEASocketServer
    let manager: LocationManager
    private let application: Application

    init(path: String, group: UInt32?, source: any LocationSource, settings: ServiceConfiguration, logger: Logger) throws(CommandFailure) {
        var configuration = settings.managerConfiguration
        // Nothing is held: a reader gets fixes while it reads, as a receiver's serial port gives them.
        configuration.journalPath = nil
        configuration.distanceFilter = nil
        do throws(LocationError) {
            application = Application(configuration: settings.applicationConfiguration)
            manager = try LocationManager(source: source, application: application, configuration: configuration)
            try application.finishLaunching()
            try application.transition(to: .active)
        } catch {
            throw .usage(error.message)
        }
        let updates = Locked(false)
        do throws(ControlError) {
            server = try NMEASocketServer(path: path, group: group, logger: logger) { [manager] count in
                // The receiver runs for the socket while one reader is connected, and rests when none is.
                updates.withLock { running in
                    if count > 0, !running {
                        running = true
                        manager.startUpdatingLocation()
                    } else if count == 0, running {
                        running = false
                        manager.stopUpdatingLocation()
                    }
                }
            }
        } catch {
            throw .cannotCreate("cannot listen on the NMEA socket \(path): \(error.message)")
        }
        manager.delegate = self
    }

    /// Closes the socket (its readers see the end) and stops the updates.
    func stop() async {
        server.stop()
        manager.shutdown()
        await manager.waitForPendingDeliveries()
    }

    func locationManager(_ manager: LocationManager, didReceive event: LocationEvent) {
        guard case .locations(let locations, _) = event else { return }
        for location in locations {
            var epoch: [UInt8] = []
            NMEAEpochEncoder.append(location, to: &epoch)
            server.send(epoch)
        }
    }
}
