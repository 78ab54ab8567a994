import Foundation
import LocationControl
import LocationCore

/// Formats ``LocationEvent``s for people: one aligned line each, with units, that fits an 80-column terminal.
///
/// A location line shows the fix time in UTC (its date only when that is not today's), the coordinate in
/// signed degrees as maps take it, altitude, horizontal accuracy, speed, course, fix mode, satellites used/in
/// view and a correction status other than plain GPS. Columns are as wide as their usual values (an
/// altitude up to 9999.9 m, an accuracy up to ±99.9 m, a speed up to 99.9 m/s); a rarer, wider value pushes
/// the rest of its line along rather than widening every line. An unknown value is `–`.
///
/// ```
/// 06:00:00.0Z  52.520008  13.404954    34.2m   ±4.5m  1.4m/s  45°  3D  9/14 DGPS
/// 2024-05-01 06:00:01.0Z  -33.868820 151.209290  -12.0m  ±12.5m  –      –    2D  4/7
/// ── state: background (executing in background, reduced accuracy)
/// ── batch: 12 held fixes delivered (foreground)
/// !! no-fix: no fix from gpsd localhost:2947 within 30 s
/// ── waiting for a fix (7 satellites seen)
/// ── fix acquired
/// ```
package enum TextEventFormatter {
    /// The event as one line, without a line break: for a held batch the line that announces it (its fixes
    /// are location lines of their own), for live fixes the first.
    package static func line(_ event: LocationEvent) -> String {
        switch event {
        case .locations(let locations, .live):
            return locations.first.map { line($0) } ?? ""
        case .locations(let locations, .held(let reason)):
            let count = locations.count
            if reason == .deferred { return "── batch: \(count) deferred \(count == 1 ? "fix" : "fixes") delivered" }
            return "── batch: \(count) held \(count == 1 ? "fix" : "fixes") delivered (\(reason.rawValue))"
        case .lifecycle(let message):
            let state = message.resultingState
            return "── state: \(state.rawValue) (\(detail(state)))"
        case .applicationStopped(let reason):
            return "!! \(LocationError.Code.applicationStopped.rawValue): the app \(TerminalText.escaped(reason.description))"
        case .accuracyPolicy(let policy):
            return "── accuracy: \(policy.rawValue)"
        case .error(let error):
            return "!! \(error.code.rawValue): \(TerminalText.escaped(error.message))"
        case .droppedHeldLocations(let count):
            return line(.error(JSONLineEncoder.droppedError(count)))
        case .region(let event):
            return "── region \(TerminalText.escaped(event.region)): \(event.kind.rawValue) at " + line(event.location)
        case .motion(let event):
            return "── motion: \(event.state.rawValue) at " + line(event.location)
        case .sourceStatus(.noFix):
            return "── waiting for a fix"
        case .sourceStatus(.hasFix):
            return "── fix acquired"
        case .sourceStatus(let status):
            return "── source: \(status.rawValue)"
        case .satellitesInView(let count):
            return "── waiting for a fix (\(count) \(count == 1 ? "satellite" : "satellites") seen)"
        }
    }

    /// A location as one aligned line; its date is left out when it is `today`'s (UTC).
    package static func line(_ location: Location, today: Date = Date()) -> String {
        let time = RFC3339.timeOfDay(location.timestamp, fractionDigits: 1, sameDayAs: today)
        var line = time.isSameDay ? "" : time.day + " "
        line += time.text + "Z  "
        line += pad(fixed(location.latitude, 6), Width.latitude) + " "
        line += pad(fixed(location.longitude, 6), Width.longitude) + " "
        line += pad(location.altitude.map { fixed($0, 1) + "m" } ?? "–", Width.altitude) + " "
        line += pad(location.horizontalAccuracy.map { "±" + fixed($0, 1) + "m" } ?? "–", Width.accuracy) + " "
        line += pad(location.speed.map { fixed($0, 1) + "m/s" } ?? "–", Width.speed) + " "
        line += pad(location.course.map { fixed($0, 0) + "°" } ?? "–", Width.course) + " "
        line += pad(location.fixMode?.rawValue ?? "–", 2, left: true)
        switch (location.satellitesUsed, location.satellitesVisible) {
        case (let used?, let visible?): line += " " + pad(String(used), 2) + "/" + pad(String(visible), 2, left: true)
        case (let used?, nil): line += " " + pad(String(used), 2)
        case (nil, let visible?): line += "  –/" + pad(String(visible), 2, left: true)
        case (nil, nil): break
        }
        // Plain GPS is what a mode of 2D or 3D already says; anything else is named, and a simulated fix (a
        // replay) says SIM there too, short enough for the line to keep within 80 columns.
        var labels: [String] = []
        if let status = location.correctionStatus, status != .gps { labels.append(label(status)) }
        if location.isSimulated, location.correctionStatus != .simulated { labels.append(label(.simulated)) }
        if !labels.isEmpty { line += " " + labels.joined(separator: "+") }
        return line.trimmingCharacters(in: .whitespaces)
    }

    /// How a lifecycle state reads for people. A suspended app is in the background but does not run
    /// (its fixes are held, or with the background location mode woken for each one).
    package static func detail(_ state: ApplicationState) -> String {
        switch state {
        case .notRunning: "terminated"
        case .inactive, .active: "foreground, high accuracy"
        case .background: "executing in background, reduced accuracy"
        case .suspended: "in the background, not running, reduced accuracy"
        }
    }

    /// The widths of the location line's columns: each holds its usual values.
    private enum Width {
        /// `-89.123456`.
        static let latitude = 10
        /// `-179.123456`.
        static let longitude = 11
        /// `-999.9m` to `9999.9m`.
        static let altitude = 7
        /// `±99.9m`.
        static let accuracy = 6
        /// `99.9m/s`.
        static let speed = 7
        /// `359°`.
        static let course = 4
    }

    /// The correction status as a GPS user writes it, short enough for the end of an 80-column line (RTK
    /// alone is a fixed solution; FLOAT its float solution).
    package static func label(_ status: CorrectionStatus) -> String {
        switch status {
        case .gps: "GPS"
        case .dgps: "DGPS"
        case .rtkFixed: "RTK"
        case .rtkFloat: "FLOAT"
        case .deadReckoning: "DR"
        case .gnssDeadReckoning: "GNSS+DR"
        case .timeOnly: "TIME"
        case .simulated: "SIM"
        case .precisePositioning: "P(Y)"
        }
    }

    private static func fixed(_ value: Double, _ digits: Int) -> String {
        String(format: "%.\(digits)f", value)
    }

    private static func pad(_ text: String, _ width: Int, left: Bool = false) -> String {
        let count = text.count
        guard count < width else { return text }
        let padding = String(repeating: " ", count: width - count)
        return left ? text + padding : padding + text
    }
}
