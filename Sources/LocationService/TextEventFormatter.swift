import Foundation
import LocationControl
import LocationCore

/// Formats ``LocationEvent``s for people: one aligned line each, with units.
///
/// Every column of a location line is as wide as its longest value, so that lines stay aligned whatever
/// they hold: a time with nine fractional digits, `90.000000 S`, `180.000000 W`, an accuracy of
/// `±99999.9 m`, an altitude of `-9999.9` to `99999.9` m, a missing value, any correction status.
///
/// ```
/// 2024-05-01T06:00:00Z              52.520008 N     13.404954 E  alt    34.2 m  ±4.5 m          1.4 m/s    45.0°  3D  DGPS            9/14 sats
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
            return locations.first.map(line) ?? ""
        case .locations(let locations, .held(let reason)):
            let count = locations.count
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

    /// A location as one aligned line.
    package static func line(_ location: Location) -> String {
        var parts: [String] = []
        parts.append(pad(RFC3339.string(from: location.timestamp), Width.timestamp, left: true))
        parts.append(pad(coordinate(location.latitude, positive: "N", negative: "S"), Width.latitude))
        parts.append(pad(coordinate(location.longitude, positive: "E", negative: "W"), Width.longitude))
        parts.append("alt " + pad(location.altitude.map { fixed($0, 1) } ?? "–", Width.altitude) + " m")
        parts.append(pad("±" + (location.horizontalAccuracy.map { fixed($0, 1) + " m" } ?? "–"), Width.accuracy, left: true))
        parts.append(pad(location.speed.map { fixed($0, 1) } ?? "–", Width.speed) + " m/s")
        parts.append(pad(location.course.map { fixed($0, 1) + "°" } ?? "–", Width.course))
        parts.append(location.fixMode?.rawValue ?? "  ")
        // A receiver can move between GPS, DGPS and RTK within a run: the column keeps its width.
        if let status = location.correctionStatus { parts.append(pad(label(status), Width.correction, left: true)) }
        switch (location.satellitesUsed, location.satellitesVisible) {
        case (let used?, let visible?): parts.append(pad(String(used), 2) + "/" + String(visible) + " sats")
        case (let used?, nil): parts.append(pad(String(used), 2) + " sats")
        case (nil, let visible?): parts.append(" –/" + String(visible) + " sats")
        case (nil, nil): break
        }
        if location.isSimulated { parts.append("(simulated)") }
        return parts.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
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

    /// The widths of the location line's columns: each holds the longest value it shows.
    private enum Width {
        /// `2024-05-01T06:00:00.123456789Z`: RFC 3339 with the nine fractional digits a time may need.
        static let timestamp = 30
        /// `90.000000 S`, with room so that the columns do not touch.
        static let latitude = 13
        /// `180.000000 W`.
        static let longitude = 14
        /// `-9999.9` to `99999.9` m.
        static let altitude = 7
        /// `±99999.9 m`.
        static let accuracy = 10
        /// `99999.9` m/s.
        static let speed = 7
        /// `359.9°`, with a space before it.
        static let course = 7
        /// The longest correction status label (`simulated fix`).
        static let correction = CorrectionStatus.allCases.map { label($0).count }.max() ?? 0
    }

    /// The correction status as a GPS user writes it.
    package static func label(_ status: CorrectionStatus) -> String {
        switch status {
        case .gps: "GPS"
        case .dgps: "DGPS"
        case .rtkFixed: "RTK fixed"
        case .rtkFloat: "RTK float"
        case .deadReckoning: "DR"
        case .gnssDeadReckoning: "GNSS+DR"
        case .timeOnly: "time only"
        case .simulated: "simulated fix"
        case .precisePositioning: "P(Y)"
        }
    }

    private static func coordinate(_ value: Double, positive: String, negative: String) -> String {
        fixed(abs(value), 6) + " " + (value < 0 ? negative : positive)
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
