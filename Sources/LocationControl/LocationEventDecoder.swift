import Foundation
import LocationCore

/// Reads the JSON lines that ``JSONLineEncoder`` writes back into ``EventFrame``s.
public enum LocationEventDecoder {
    private struct Header: Decodable {
        var type: String
        var state: String?
        var event: String?
        var count: Int?
        var reason: String?
        var code: String?
        var message: String?
        var status: String?
        var satellitesVisible: Int?
        var policy: String?
        var dropped: Int?
        var elapsed: Double?
        var budget: Double?
        var tasks: [String]?
        var id: String?
        var region: String?
    }

    private struct BatchBody: Decodable {
        var locations: [Location]?
        var records: String?
    }

    /// Decodes one line; throws `LocationError.Code.invalidData` quoting the line when it is not an event,
    /// or an event of a type this build does not know.
    public static func frame(_ line: [UInt8]) throws(LocationError) -> EventFrame {
        guard let frame = try frameIfKnown(line) else {
            throw LocationError(.invalidData, "unknown event type: \(preview(line))")
        }
        return frame
    }

    /// Decodes one line, or returns `nil` for a well-formed event of a type this build does not know (a
    /// newer daemon's), which a watcher skips; throws for a line that is not an event or a malformed one.
    ///
    /// A batch line of an earlier version (a `count` and no `locations`: its fixes followed as location lines)
    /// is such an event: its fixes are read as they come.
    public static func frameIfKnown(_ line: [UInt8]) throws(LocationError) -> EventFrame? {
        // Most lines are fixes, written by JSONLineEncoder: read those directly.
        if let location = LocationLineDecoder.location(line) { return EventFrame(.locations([location], .live)) }
        if let batch = LocationLineDecoder.batch(line) {
            return heldBatch(batch.locations, reason: batch.reason, id: batch.id)
        }
        let data = Data(line)
        let decoder = JSONDecoder()
        let header: Header
        do { header = try decoder.decode(Header.self, from: data) } catch {
            throw LocationError(.invalidData, "not an event line: \(preview(line))")
        }
        switch header.type {
        case "location":
            do { return EventFrame(.locations([try decoder.decode(Location.self, from: data)], .live)) } catch {
                throw LocationError(.invalidData, "bad location event: \(preview(line))")
            }
        case "region":
            guard let region = header.region, let kind = header.event.flatMap(RegionEvent.Kind.init(rawValue:)),
                let location = try? decoder.decode(Location.self, from: data)
            else {
                throw LocationError(.invalidData, "bad region event: \(preview(line))")
            }
            return EventFrame(.region(RegionEvent(region: region, kind: kind, location: location)))
        case "motion":
            guard let state = header.state.flatMap(MotionState.init(rawValue:)),
                let location = try? decoder.decode(Location.self, from: data)
            else {
                throw LocationError(.invalidData, "bad motion event: \(preview(line))")
            }
            return EventFrame(.motion(MotionEvent(state: state, location: location)))
        case "state":
            guard let state = header.state.flatMap(ApplicationState.init(rawValue:)) else {
                throw LocationError(.invalidData, "bad state event: \(preview(line))")
            }
            // Without an event (an earlier version's line) or with one this build does not know (a newer
            // daemon's), the state stands for the event that leads to it.
            guard let name = header.event, let event = ApplicationEvent(rawValue: name) else {
                return EventFrame(.lifecycle(.leading(to: state)))
            }
            guard event.resultingState == state else { throw LocationError(.invalidData, "bad state event: \(preview(line))") }
            return EventFrame(.lifecycle(event))
        case "batch":
            guard let count = header.count, count >= 0 else { throw LocationError(.invalidData, "bad batch event: \(preview(line))") }
            let body: BatchBody
            do { body = try decoder.decode(BatchBody.self, from: data) } catch {
                throw LocationError(.invalidData, "bad batch event: \(preview(line))")
            }
            if let records = body.records {
                var text = records
                let decoded = text.withUTF8 { LocationLineDecoder.records($0) }
                guard body.locations == nil, let locations = decoded else {
                    throw LocationError(.invalidData, "bad batch event: its records are not base64 of whole journal records: \(preview(line))")
                }
                guard locations.count == count else {
                    throw LocationError(.invalidData, "bad batch event: count \(count) but \(locations.count) records: \(preview(line))")
                }
                return heldBatch(locations, reason: header.reason ?? "foreground", id: header.id)
            }
            guard let locations = body.locations else { return nil }
            guard locations.count == count else {
                throw LocationError(.invalidData, "bad batch event: count \(count) but \(locations.count) locations: \(preview(line))")
            }
            return heldBatch(locations, reason: header.reason ?? "foreground", id: header.id)
        case "error":
            // A code this build does not know is kept as it is: codes are extensible.
            let code = header.code.map(LocationError.Code.init(rawValue:)) ?? .sourceFailed
            if code == .batchOverflow, let dropped = header.dropped {
                guard dropped > 0 else { throw LocationError(.invalidData, "bad error event: \(preview(line))") }
                return EventFrame(.droppedHeldLocations(dropped))
            }
            return EventFrame(.error(LocationError(code, header.message ?? "unknown error")))
        case "stopped":
            guard let code = header.reason else { throw LocationError(.invalidData, "bad stopped event: \(preview(line))") }
            // A reason this build does not know (a newer daemon's) is skipped like an unknown event.
            guard StoppedReason.isKnown(code) else { return nil }
            guard let reason = StoppedReason.reason(code, elapsed: header.elapsed, budget: header.budget, tasks: header.tasks)
            else { throw LocationError(.invalidData, "bad stopped event: \(preview(line))") }
            return EventFrame(.applicationStopped(reason))
        case "policy":
            guard let name = header.policy else { throw LocationError(.invalidData, "bad policy event: \(preview(line))") }
            // A policy this build does not know (a newer daemon's) is skipped like an unknown event.
            return AccuracyPolicy(rawValue: name).map { EventFrame(.accuracyPolicy($0)) }
        case "source":
            guard let status = header.status.flatMap(LocationSourceStatus.init(rawValue:)),
                (header.satellitesVisible ?? 0) >= 0
            else {
                throw LocationError(.invalidData, "bad source event: \(preview(line))")
            }
            // An earlier version carried the satellites seen while waiting in the source line.
            if let satellites = header.satellitesVisible, status == .noFix { return EventFrame(.satellitesInView(satellites)) }
            return EventFrame(.sourceStatus(status))
        case "satellites":
            guard let count = header.satellitesVisible, count >= 0 else {
                throw LocationError(.invalidData, "bad satellites event: \(preview(line))")
            }
            return EventFrame(.satellitesInView(count))
        default:
            return nil
        }
    }

    /// A held batch's event; one without fixes is not an event (a batch is never empty) and is skipped.
    private static func heldBatch(
        _ locations: [Location], reason: String, id: String?
    ) -> EventFrame? {
        guard !locations.isEmpty else { return nil }
        // A reason this build does not know (a newer daemon's) still delivers the fixes, as sent again.
        return EventFrame(.locations(locations, .held(HeldBatchReason(rawValue: reason) ?? .unacknowledged)), batchID: id)
    }

    private static func preview(_ line: [UInt8]) -> String {
        let text = String(decoding: line.prefix(160), as: UTF8.self)
        return line.count > 160 ? text + "…" : text
    }
}

/// The `reason` of a `stopped` line: an ``ApplicationTerminationReason`` as a code and its values.
enum StoppedReason {
    static func code(of reason: ApplicationTerminationReason) -> String {
        switch reason {
        case .terminated: "terminated"
        case .exitedOnLeavingForeground: "exited-on-leaving-foreground"
        case .killedWhileSuspended: "killed-while-suspended"
        case .didEnterBackgroundOverBudget: "background-budget"
        case .backgroundTaskExpired: "background-task-expired"
        }
    }

    /// Every code, as ``code(of:)`` writes them.
    private static let codes: Set<String> = [
        code(of: .terminated), code(of: .exitedOnLeavingForeground), code(of: .killedWhileSuspended),
        code(of: .didEnterBackgroundOverBudget(elapsed: .zero, budget: .zero)), code(of: .backgroundTaskExpired(tasks: [])),
    ]

    static func isKnown(_ code: String) -> Bool { codes.contains(code) }

    static func reason(_ code: String?, elapsed: Double?, budget: Double?, tasks: [String]?) -> ApplicationTerminationReason? {
        switch code {
        case "terminated": return .terminated
        case "exited-on-leaving-foreground": return .exitedOnLeavingForeground
        case "killed-while-suspended": return .killedWhileSuspended
        case "background-budget":
            guard let elapsed, let budget, elapsed.isFinite, budget.isFinite, elapsed >= 0, budget >= 0 else { return nil }
            return .didEnterBackgroundOverBudget(
                elapsed: ValueRange.duration(clampingSeconds: elapsed), budget: ValueRange.duration(clampingSeconds: budget))
        case "background-task-expired":
            guard let tasks else { return nil }
            return .backgroundTaskExpired(tasks: tasks)
        default: return nil
        }
    }
}
