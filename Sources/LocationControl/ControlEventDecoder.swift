import Foundation
import LocationCore

/// Reads the JSON lines that ``JSONLineEncoder`` writes back into ``ControlEvent``s.
public enum ControlEventDecoder {
    private struct Header: Decodable {
        var type: String
        var state: String?
        var count: Int?
        var reason: String?
        var code: String?
        var message: String?
        var status: String?
        var satellitesVisible: Int?
        var id: String?
    }

    private struct BatchBody: Decodable {
        var locations: [Location]?
    }

    /// Decodes one line; throws ``LocationError/Code/invalidData`` quoting the line when it is not an event,
    /// or an event of a type this build does not know.
    public static func event(_ line: [UInt8]) throws(LocationError) -> ControlEvent {
        guard let event = try eventIfKnown(line) else {
            throw LocationError(.invalidData, "unknown event type: \(preview(line))")
        }
        return event
    }

    /// Decodes one line, or returns `nil` for a well-formed event of a type this build does not know (a
    /// newer daemon's), which a watcher skips; throws for a line that is not an event or a malformed one.
    public static func eventIfKnown(_ line: [UInt8]) throws(LocationError) -> ControlEvent? {
        // Most lines are fixes, written by JSONLineEncoder: read those directly.
        if let location = LocationLineDecoder.location(line) { return .location(location) }
        if let batch = LocationLineDecoder.batch(line) { return .batch(batch.locations, reason: batch.reason, id: batch.id) }
        let data = Data(line)
        let decoder = JSONDecoder()
        let header: Header
        do { header = try decoder.decode(Header.self, from: data) } catch {
            throw LocationError(.invalidData, "not an event line: \(preview(line))")
        }
        switch header.type {
        case "location":
            do { return .location(try decoder.decode(Location.self, from: data)) } catch {
                throw LocationError(.invalidData, "bad location event: \(preview(line))")
            }
        case "state":
            guard let state = header.state.flatMap(ApplicationState.init(rawValue:)) else {
                throw LocationError(.invalidData, "bad state event: \(preview(line))")
            }
            return .state(state)
        case "batch":
            guard let count = header.count, count >= 0 else { throw LocationError(.invalidData, "bad batch event: \(preview(line))") }
            let body: BatchBody
            do { body = try decoder.decode(BatchBody.self, from: data) } catch {
                throw LocationError(.invalidData, "bad batch event: \(preview(line))")
            }
            // A batch line of an earlier version announced its locations as the next `count` lines: they are
            // read as they come, and the batch itself carries none.
            guard let locations = body.locations else { return .batch([], reason: header.reason ?? "foreground", id: header.id) }
            guard locations.count == count else {
                throw LocationError(.invalidData, "bad batch event: count \(count) but \(locations.count) locations: \(preview(line))")
            }
            return .batch(locations, reason: header.reason ?? "foreground", id: header.id)
        case "error":
            // A code this build does not know is kept as it is: codes are extensible.
            let code = header.code.map(LocationError.Code.init(rawValue:)) ?? .sourceFailed
            return .error(LocationError(code, header.message ?? "unknown error"))
        case "source":
            guard let status = header.status.flatMap(LocationSourceStatus.init(rawValue:)),
                (header.satellitesVisible ?? 0) >= 0
            else {
                throw LocationError(.invalidData, "bad source event: \(preview(line))")
            }
            return .source(status, satellitesVisible: header.satellitesVisible)
        default:
            return nil
        }
    }

    private static func preview(_ line: [UInt8]) -> String {
        let text = String(decoding: line.prefix(160), as: UTF8.self)
        return line.count > 160 ? text + "…" : text
    }
}
