import Foundation
import LocationControl
import LocationCore

/// An app as a test plays it: its manager runs through locationd, and every delegate event is one line.
enum LocationdApp {
    /// Prints events as JSON lines, one write each, so that a kill never leaves half a line.
    final class Printer: LocationManagerDelegate {
        func locationManager(_ manager: LocationManager, didReceive event: LocationEvent) {
            let line: String
            switch event {
            case .locations(let locations, let delivery):
                let kind: String
                switch delivery {
                case .live: kind = "live"
                case .held(let reason): kind = "held-\(reason.rawValue)"
                }
                let times = locations.map { String(format: "%.3f", $0.timestamp.timeIntervalSince1970) }.joined(separator: ",")
                line = #"{"event":"locations","kind":"\#(kind)","count":\#(locations.count),"times":[\#(times)]}"#
            case .lifecycle(let message):
                line = #"{"event":"lifecycle","name":"\#(message)"}"#
            case .error(let error):
                line = #"{"event":"error","code":"\#(error.code.rawValue)","message":\#(String(reflecting: error.message))}"#
            default:
                return
            }
            FileHandle.standardOutput.write(Data((line + "\n").utf8))
        }
    }

    static func run(socket: String, app: String, journal: String, reducedInterval: Double, startSuspended: Bool) -> Never {
        let application = Application()
        let printer = Printer()
        let manager: LocationManager
        do {
            let source = try DaemonLocationSource(
                app: app, socket: socket, policy: AppPolicy(reducedInterval: reducedInterval))
            var configuration = LocationManagerConfiguration()
            configuration.reduced.interval = .milliseconds(Int(reducedInterval * 1000))
            // What the app holds while suspended survives its kill -9.
            configuration.journalPath = journal
            manager = try LocationManager(source: source, application: application, configuration: configuration)
            manager.delegate = printer
            try application.finishLaunching()
            // Launched in the background (as a location event relaunches an app): it holds from the start.
            if startSuspended { try application.transition(to: .suspended) }
            manager.startUpdatingLocation()
        } catch {
            FileHandle.standardError.write(Data("location-test-child: \(error)\n".utf8))
            exit(69)
        }
        FileHandle.standardOutput.write(Data("ready\n".utf8))
        while let command = readLine() {
            if command == "quit" { break }
            if command == "held" {
                let times = manager.heldLocations.map { String(format: "%.3f", $0.timestamp.timeIntervalSince1970) }.joined(separator: ",")
                FileHandle.standardOutput.write(Data(#"{"event":"held","count":\#(manager.heldCount),"times":[\#(times)]}"#.utf8 + Data("\n".utf8)))
                continue
            }
            if command == "active", application.applicationState != .active {
                // How many fixes the app holds as it asks for the foreground: the batch that follows has them.
                FileHandle.standardOutput.write(Data(#"{"event":"held","count":\#(manager.heldCount)}"#.utf8 + Data("\n".utf8)))
            }
            guard let state = ApplicationState(rawValue: command) else { continue }
            do { try application.transition(to: state) } catch {
                FileHandle.standardError.write(Data("location-test-child: \(error)\n".utf8))
            }
            FileHandle.standardOutput.write(Data(#"{"event":"state","state":"\#(application.applicationState.rawValue)"}"#.utf8 + Data("\n".utf8)))
        }
        manager.stopUpdatingLocation()
        withExtendedLifetime((manager, printer)) {}
        exit(0)
    }
}
