import Foundation
import LocationControl
import LocationCore

/// Formats ``ControlEvent``s for people: one aligned line each, with units.
///
/// ```
/// 2024-05-01T06:00:00Z    52.520008 N   13.404954 E   alt   34.2 m  ±4.5 m      1.4 m/s   45.0°  3D  DGPS   9/14 sats
/// ── state: background (executing in background, reduced accuracy)
/// ── batch: 12 held fixes delivered (foreground)
/// !! no-fix: no fix from gpsd localhost:2947 within 30 s
/// ── waiting for a fix (7 satellites seen)
/// ── fix acquired
/// ```
package enum TextEventFormatter {
    /// The event as one line, without a line break.
    package static func line(_ event: ControlEvent) -> String {
        switch event {
        case .location(let location):
            return line(location)
        case .state(let state):
            let background = state == .background || state == .suspended
            let detail = background ? "executing in background, reduced accuracy" : "foreground, high accuracy"
            return "── state: \(state.rawValue) (\(state == .notRunning ? "terminated" : detail))"
        case .batch(let count, let reason):
            return "── batch: \(count) held \(count == 1 ? "fix" : "fixes") delivered (\(reason))"
        case .error(let error):
            return "!! \(error.code.rawValue): \(TerminalText.escaped(error.message))"
        case .source(.noFix, let satellites):
            let seen = satellites.map { " (\($0) \($0 == 1 ? "satellite" : "satellites") seen)" } ?? ""
            return "── waiting for a fix" + seen
        case .source(.hasFix, _):
            return "── fix acquired"
        case .source(let status, _):
            return "── source: \(status.rawValue)"
        }
    }

    /// A location as one aligned line.
    package static func line(_ location: Location) -> String {
        var parts: [String] = []
        parts.append(pad(RFC3339.string(from: location.timestamp), 24, left: true))
        parts.append(pad(coordinate(location.latitude, positive: "N", negative: "S"), 13))
        parts.append(pad(coordinate(location.longitude, positive: "E", negative: "W"), 14))
        parts.append(location.altitude.map { "alt " + pad(fixed($0, 1), 7) + " m" } ?? pad("alt       –  ", 14, left: true))
        parts.append(location.horizontalAccuracy.map { pad("±" + fixed($0, 1) + " m", 10, left: true) } ?? pad("±–", 10, left: true))
        parts.append(location.speed.map { pad(fixed($0, 1), 7) + " m/s" } ?? pad("– m/s", 11))
        parts.append(location.course.map { pad(fixed($0, 1) + "°", 7) } ?? pad("–", 7))
        parts.append(location.fixMode?.rawValue ?? "  ")
        if let status = location.correctionStatus { parts.append(label(status)) }
        switch (location.satellitesUsed, location.satellitesVisible) {
        case (let used?, let visible?): parts.append(pad(String(used), 2) + "/" + String(visible) + " sats")
        case (let used?, nil): parts.append(pad(String(used), 2) + " sats")
        case (nil, let visible?): parts.append(" –/" + String(visible) + " sats")
        case (nil, nil): break
        }
        if location.isSimulated { parts.append("(simulated)") }
        return parts.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
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
