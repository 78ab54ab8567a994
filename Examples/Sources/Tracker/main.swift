// Tracker: follows the app lifecycle and gets its held batch back when it returns to the foreground.
//
//   swift run Tracker FILE.gpx
//
// Replays FILE.gpx 100 times faster than recorded through a LocationManager, reads `manager.events`, and
// drives the Application: active (live fixes) → background for one second (background location mode is
// off by default, so the app is suspended and its fixes are held) → foreground, where the held fixes
// arrive as one batch before any new live fix. A FixCollector delegate (ExampleSupport) sees the same
// deliveries through the delegate API; the totals of both are printed at the end.
import ExampleSupport
import Foundation
import LocationCore
import LocationGPX

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 1, let path = arguments.first, !path.hasPrefix("-") else {
    FileHandle.standardError.write(Data("usage: Tracker FILE.gpx\n".utf8))
    exit(64)
}

func format(_ location: Location) -> String {
    String(format: "%@  %.6f, %.6f", location.timestamp.formatted(.iso8601), location.latitude, location.longitude)
}

let application = Application()
let manager: LocationManager
do {
    manager = try LocationManager(
        source: GPXReplaySource(path: path, options: .init(pacing: .speedFactor(100))),
        application: application,
        // In the background: one fix every 0.1 s (instead of the shipped 60 s), so one second holds a few.
        configuration: .init(reduced: .init(interval: .milliseconds(100))))
} catch {
    FileHandle.standardError.write(Data("Tracker: \(error)\n".utf8))
    exit(66)
}
let collector = FixCollector()
manager.delegate = collector  // held weakly: `collector` lives until the end of the program

let liveBeforeBackground = 5
let liveAfterForeground = 5
var liveCount = 0
var liveSinceForeground: Int?
var heldCount: Int?

do {
    try application.transition(to: .active)
    manager.startUpdatingLocation()
    events: for await event in manager.events {
        switch event {
        case .locations(let locations, .live):
            for location in locations { print("live  \(format(location))") }
            liveCount += locations.count
            if liveSinceForeground == nil, heldCount == nil, liveCount >= liveBeforeBackground,
                application.applicationState == .active
            {
                try application.enterBackground()
                // Come back after a second; the app gets no events while it is suspended.
                Task {
                    try await Task.sleep(for: .seconds(1))
                    try application.enterForeground()  // willEnterForeground: the held batch is flushed
                    try application.becomeActive()
                }
            }
            if let since = liveSinceForeground {
                liveSinceForeground = since + locations.count
                if since + locations.count >= liveAfterForeground { break events }
            }
        case .locations(let locations, .held(let reason)):
            print("held  \(locations.count) fixes, delivered on \(reason), oldest first:")
            for location in locations { print("held    \(format(location))") }
            heldCount = locations.count
            liveSinceForeground = 0
        case .lifecycle(let message):
            print("app   \(message)")
        case .sourceStatus(.ended):
            print("source: the file has ended")
            // A short file may end while the app is in the background: come back for the held fixes.
            if application.executingInBackground { try application.enterForeground() } else { break events }
        case .error(let error):
            print("error \(error)")
        default:
            break
        }
    }
    manager.stopUpdatingLocation()
} catch {
    FileHandle.standardError.write(Data("Tracker: \(error)\n".utf8))
    exit(70)
}

let seen = collector.snapshot
print("Tracker: \(liveCount) live fixes, a held batch of \(heldCount.map(String.init) ?? "no") fixes")
print("Tracker: the delegate saw \(seen.live.count) live fixes and \(seen.heldBatches.map(\.count)) held")
guard heldCount != nil else {
    FileHandle.standardError.write(Data("Tracker: no held batch was delivered\n".utf8))
    exit(1)
}
