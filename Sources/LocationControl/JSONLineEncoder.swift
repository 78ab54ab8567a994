import Foundation
import LocationCore

/// Writes ``ControlEvent``s as JSON lines, by hand, because it is on the hot path of every replay.
///
/// Shapes (keys in this order, absent location fields omitted):
/// - `{"type":"location", ...Location fields...}`
/// - `{"type":"state","state":"background","executingInBackground":true,"policy":"reduced"}`
/// - `{"type":"batch","count":N,"reason":"foreground","locations":[{...},...]}` (from locationd also `"id":"…"`
///   before `locations`, to acknowledge it): a held batch whole, its locations as objects without `type`
/// - `{"type":"error","code":"...","message":"..."}`
/// - `{"type":"source","status":"no-fix","satellitesVisible":7}` (the count only when known),
///   `{"type":"source","status":"has-fix"}`
public enum JSONLineEncoder {
    /// The event as one line, ending in `\n`.
    public static func line(_ event: ControlEvent) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(320)
        append(event, to: &bytes)
        return bytes
    }

    /// Appends the event as one line, ending in `\n`.
    public static func append(_ event: ControlEvent, to bytes: inout [UInt8]) {
        switch event {
        case .location(let location):
            bytes.append(contentsOf: #"{"type":"location","#.utf8)
            appendFields(of: location, to: &bytes)
            bytes.append(contentsOf: "}\n".utf8)
        case .state(let state):
            let background = state == .background || state == .suspended
            bytes.append(contentsOf: #"{"type":"state","state":""#.utf8)
            bytes.append(contentsOf: state.rawValue.utf8)
            bytes.append(contentsOf: #"","executingInBackground":"#.utf8)
            bytes.append(contentsOf: (background ? "true" : "false").utf8)
            bytes.append(contentsOf: #","policy":""#.utf8)
            bytes.append(contentsOf: ControlEvent.policy(for: state).rawValue.utf8)
            bytes.append(contentsOf: "\"}\n".utf8)
        case .batch(let locations, let reason, let id):
            bytes.reserveCapacity(bytes.count + locations.count * 300 + 128)
            appendBatchHeader(count: locations.count, reason: reason, id: id, to: &bytes)
            appendObjects(of: locations, to: &bytes)
            bytes.append(contentsOf: "]}\n".utf8)
        case .error(let error):
            bytes.append(contentsOf: #"{"type":"error","code":""#.utf8)
            bytes.append(contentsOf: error.code.rawValue.utf8)
            bytes.append(contentsOf: #"","message":"#.utf8)
            appendString(error.message, to: &bytes)
            bytes.append(contentsOf: "}\n".utf8)
        case .source(let status, let satellites):
            bytes.append(contentsOf: #"{"type":"source","status":""#.utf8)
            bytes.append(contentsOf: status.rawValue.utf8)
            bytes.append(UInt8(ascii: "\""))
            if let satellites {
                bytes.append(contentsOf: #","satellitesVisible":"#.utf8)
                bytes.append(contentsOf: String(satellites).utf8)
            }
            bytes.append(contentsOf: "}\n".utf8)
        }
    }

    /// A batch line whose location objects are already encoded (``object(_:)``, joined by commas): the daemon
    /// encodes a batch's locations once for all its watchers.
    public static func batchLine(count: Int, reason: String, id: String?, objects: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(objects.count + 128)
        appendBatchHeader(count: count, reason: reason, id: id, to: &bytes)
        bytes.append(contentsOf: objects)
        bytes.append(contentsOf: "]}\n".utf8)
        return bytes
    }

    /// The locations as objects without `type`, joined by commas: the inside of a batch line's `locations`.
    public static func appendObjects(of locations: [Location], to bytes: inout [UInt8]) {
        for (index, location) in locations.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(UInt8(ascii: "{"))
            appendFields(of: location, to: &bytes)
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// `{"type":"batch","count":N,"reason":R[,"id":I],"locations":[`
    private static func appendBatchHeader(count: Int, reason: String, id: String?, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: #"{"type":"batch","count":"#.utf8)
        bytes.append(contentsOf: String(count).utf8)
        bytes.append(contentsOf: #","reason":"#.utf8)
        appendString(reason, to: &bytes)
        if let id {
            bytes.append(contentsOf: #","id":"#.utf8)
            appendString(id, to: &bytes)
        }
        bytes.append(contentsOf: #","locations":["#.utf8)
    }

    /// A location as a JSON object without the `type` key (as `locationctl current --format json` prints it).
    public static func object(_ location: Location) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(ascii: "{")]
        appendFields(of: location, to: &bytes)
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    /// Appends `"key":value,...` for the location's present fields, in the data contract's order.
    public static func appendFields(of location: Location, to bytes: inout [UInt8]) {
        func number(_ key: String, _ value: Double?, comma: Bool = true) {
            guard let value else { return }
            if comma { bytes.append(UInt8(ascii: ",")) }
            bytes.append(UInt8(ascii: "\""))
            bytes.append(contentsOf: key.utf8)
            bytes.append(contentsOf: "\":".utf8)
            appendNumber(value, to: &bytes)
        }
        number("latitude", location.latitude, comma: false)
        number("longitude", location.longitude)
        number("altitude", location.altitude)
        number("ellipsoidalAltitude", location.ellipsoidalAltitude)
        number("horizontalAccuracy", location.horizontalAccuracy)
        number("verticalAccuracy", location.verticalAccuracy)
        number("speed", location.speed)
        number("speedAccuracy", location.speedAccuracy)
        number("course", location.course)
        number("courseAccuracy", location.courseAccuracy)
        number("climb", location.climb)
        number("hdop", location.hdop)
        number("vdop", location.vdop)
        number("pdop", location.pdop)
        bytes.append(contentsOf: #","timestamp":""#.utf8)
        RFC3339.append(location.timestamp, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
        if let mode = location.fixMode {
            bytes.append(contentsOf: #","fixMode":""#.utf8)
            bytes.append(contentsOf: mode.rawValue.utf8)
            bytes.append(UInt8(ascii: "\""))
        }
        if let status = location.correctionStatus {
            bytes.append(contentsOf: #","correctionStatus":""#.utf8)
            bytes.append(contentsOf: status.rawValue.utf8)
            bytes.append(UInt8(ascii: "\""))
        }
        if let satellites = location.satellitesUsed {
            bytes.append(contentsOf: #","satellitesUsed":"#.utf8)
            bytes.append(contentsOf: String(satellites).utf8)
        }
        if let satellites = location.satellitesVisible {
            bytes.append(contentsOf: #","satellitesVisible":"#.utf8)
            bytes.append(contentsOf: String(satellites).utf8)
        }
        if let source = location.source {
            bytes.append(contentsOf: #","source":"#.utf8)
            appendString(source, to: &bytes)
        }
        bytes.append(contentsOf: #","isSimulated":"#.utf8)
        bytes.append(contentsOf: (location.isSimulated ? "true" : "false").utf8)
    }

    /// Appends a finite number in the shortest form that reads back to the same value.
    public static func appendNumber(_ value: Double, to bytes: inout [UInt8]) {
        if value == value.rounded(), abs(value) < 1e15 {
            bytes.append(contentsOf: String(Int64(value)).utf8)
        } else {
            bytes.append(contentsOf: value.description.utf8)
        }
    }

    /// Appends a JSON string literal with the escapes JSON requires.
    public static func appendString(_ text: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): bytes.append(contentsOf: #"\\"#.utf8)
            case 0x0A: bytes.append(contentsOf: #"\n"#.utf8)
            case 0x0D: bytes.append(contentsOf: #"\r"#.utf8)
            case 0x09: bytes.append(contentsOf: #"\t"#.utf8)
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: #"\u00"#.utf8)
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0xF)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
