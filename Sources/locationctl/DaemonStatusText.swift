import Foundation
import LocationService
import LocationControl
import LocationCore

/// The `status` reply as `locationctl status` prints it for people.
extension DaemonStatus {
    private var sourceLine: String {
        var line = "\(source) (\(sourceStatus.rawValue)" + (sourceDownSince.map { " since \($0)" } ?? "") + ")"
        // The reason it is down, unless the last problem (which follows) already says it.
        if let sourceDownReason, sourceProblem?.hasSuffix(sourceDownReason) != true { line += ": \(sourceDownReason)" }
        if let sourceProblem { line += "; last problem: \(sourceProblem)" }
        return line
    }

    /// A state in the background as `status` shows it: running or not.
    private static func backgroundDetail(_ state: ApplicationState) -> String {
        state == .suspended ? "in the background, not running" : "executing in background"
    }

    /// The app's own settings after its policy, when the daemon reports them.
    private var policyDetail: String {
        guard let reducedInterval else { return "" }
        var parts = ["background: one fix every \(ValueRange.text(reducedInterval)) s"
            + (reducedAccuracy.map { " at \(ValueRange.text($0)) m or better" } ?? "")]
        if let backgroundLocation { parts.append("background location \(backgroundLocation ? "on" : "off")") }
        if updating == false { parts.append("updates stopped") }
        return " (" + parts.joined(separator: "; ") + ")"
    }

    /// The NMEA socket: where it is, its readers, and what they got and missed.
    static func nmeaLine(_ socket: NMEASocketStatus) -> String {
        var line = "\(socket.path): \(socket.connections.counted("reader")), \(socket.epochsSent.counted("fix", "fixes")) sent"
        if socket.epochsMissed > 0 { line += ", \(socket.epochsMissed.counted("fix", "fixes")) missed (a reader behind)" }
        if socket.refused > 0 { line += ", \(socket.refused.counted("connection")) refused (too many)" }
        return line
    }

    /// One uplink: where it sends, whether it is connected, and how far its outbox has got.
    static func uplinkLine(_ uplink: UplinkStatus) -> String {
        var line = "\(uplink.name): \(uplink.connected ? "connected" : "not connected"), \(uplink.queued) queued"
            + " (\(uplink.inFlight) of them in flight), \(uplink.acknowledged) acknowledged"
        if uplink.droppedFull > 0 { line += ", \(uplink.droppedFull) dropped (outbox full)" }
        if let refused = uplink.droppedRefused, refused > 0 { line += ", \(refused) dropped (refused by the server)" }
        if let old = uplink.droppedOld, old > 0 { line += ", \(old) dropped (older than max-age)" }
        if let last = uplink.lastAcknowledged { line += ", last at \(last)" }
        if let events = uplink.events, events.queued + events.acknowledged + events.dropped + events.refused > 0 {
            line += "; transitions: \(events.queued) waiting, \(events.acknowledged) acknowledged"
            if events.dropped > 0 { line += ", \(events.dropped) dropped (full)" }
            if events.refused > 0 { line += ", \(events.refused) refused" }
        }
        if let zone = uplink.zone { line += "; zone \(JSONText.string(zone))" }
        if let error = uplink.lastError { line += "; \(error)" + (uplink.lastErrorSince.map { " since \($0)" } ?? "") }
        if let next = uplink.nextAttempt { line += "; next attempt at \(next)" }
        if uplink.url.contains("format=homeassistant") {
            line += "; the latest fix only, no outbox"
        } else if uplink.outbox == nil {
            line += "; outbox in memory only (no --journal)"
        }
        if let problem = uplink.outboxProblem { line += "; outbox not written (fixes kept in memory): \(problem)" }
        return line
    }

    /// Aligned `label: value` lines for people.
    package var text: String {
        let fix: String
        if let lastFix, let lastFixAge {
            fix = TextEventFormatter.line(lastFix) + String(format: "  (%.1f s ago)", lastFixAge)
        } else {
            fix = "none yet"
        }
        var appRows: [(String, String)] = []
        if let app {
            var value = app + (owner.map { " (uid \($0)'s)" } ?? " (shared by every client)")
            if attached == true { value += ", the app is connected" }
            if let abandonedSince { value += ", gone since \(abandonedSince)" + (keptUntil.map { ", kept until \($0)" } ?? "") }
            appRows.append(("app", value))
        }
        if let receiver {
            let consumers = (apps.map { " for \($0) \($0 == 1 ? "app" : "apps")" } ?? "")
                + (uplinks.map { $0.isEmpty ? "" : " and \($0.count) \($0.count == 1 ? "uplink" : "uplinks")" } ?? "")
                + ((nmeaSocket?.connections ?? 0) > 0 ? " and the NMEA socket's readers" : "")
            appRows.append(("receiver", receiver + consumers))
        }
        let rows: [(String, String)] = appRows + [
            ("state", state.rawValue + (executingInBackground ? " (\(Self.backgroundDetail(state)))" : "")),
            ("policy", policy.rawValue + policyDetail),
            ("source", sourceLine),
            ("last fix", fix),
            ("held", "\(held) \(held == 1 ? "fix" : "fixes")" + (holdLimit.map { " of at most \($0)" } ?? "")
                + (unjournaled > 0 ? " (\(unjournaled) not in the journal yet)" : "")
                + ((unacknowledged ?? 0) > 0 ? "; \(unacknowledged ?? 0) flushed, waiting for a consumer to acknowledge them" : "")),
            ("dropped", "\(dropped)" + (outliersRejected.map { "; \($0) rejected as outliers" } ?? "")),
        ] + (motion.map { [("motion", $0.rawValue)] } ?? []) + [
            ("journal", (journal ?? "none (held fixes are kept in memory only)") + (journalProblem.map { " (problem: \($0))" } ?? "")),
            ("watchers", "\(watchers)"),
            ("uptime", String(format: "%.0f s", uptime)),
        ] + (socket.map { [("socket", $0)] } ?? []) + (uplinks ?? []).map { ("uplink", Self.uplinkLine($0)) }
            + (nmeaSocket.map { [("nmea", Self.nmeaLine($0))] } ?? [])
        // The values come from the daemon: nothing in them may reach the terminal as a control character.
        return rows.map { label, value in
            (label + ":").padding(toLength: 10, withPad: " ", startingAt: 0) + TerminalText.escaped(value)
        }
            .joined(separator: "\n")
    }
}
