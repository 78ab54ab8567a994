import Foundation
import LocationCore

/// Writes `LocationEvent`s (``EventFrame``s) as JSON lines, by hand, because it is on the hot path of every
/// replay.
///
/// Shapes (keys in this order, absent location fields omitted):
/// - `{"type":"location", ...Location fields...}`: a live fix (`LocationDelivery.live`)
/// - `{"type":"batch","count":N,"reason":"foreground","locations":[{...},...]}` (from locationd also
///   `"id":"…"` before `locations`, to acknowledge it): a held batch whole, its locations as objects without
///   `type`; for a watcher that asked for ``HeldBatchEncoding/records``, `"records":"…"` in their place
/// - `{"type":"state","state":"background","executingInBackground":true,"policy":"reduced","event":"didEnterBackground"}`:
///   a lifecycle event and the state it leaves the app in
/// - `{"type":"stopped","reason":"killed-while-suspended","message":"the app killed while suspended"}`, with
///   `"elapsed"` and `"budget"` (seconds) for `background-budget` and `"tasks"` for `background-task-expired`
/// - `{"type":"policy","policy":"reduced"}`
/// - `{"type":"source","status":"no-fix"}`
/// - `{"type":"satellites","satellitesVisible":7}`: while there is no fix
/// - `{"type":"error","code":"...","message":"..."}`; for dropped held fixes the code is `batch-overflow` and
///   `"dropped":N` follows
public enum JSONLineEncoder {
    /// The event as one line (several for live locations, one each), ending in `\n`.
    public static func line(_ event: LocationEvent, batchID: String? = nil) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(320)
        append(event, batchID: batchID, to: &bytes)
        return bytes
    }

    /// The frame as one line, ending in `\n`.
    public static func line(_ frame: EventFrame) -> [UInt8] {
        line(frame.event, batchID: frame.batchID)
    }

    /// Appends the event as one line (several for live locations, one each), ending in `\n`; `batchID` is
    /// written in a held batch's line.
    public static func append(_ event: LocationEvent, batchID: String? = nil, to bytes: inout [UInt8]) {
        switch event {
        case .locations(let locations, .live):
            for location in locations {
                bytes.append(contentsOf: #"{"type":"location","#.utf8)
                appendFields(of: location, to: &bytes)
                bytes.append(contentsOf: "}\n".utf8)
            }
        case .locations(let locations, .held(let reason)):
            bytes.reserveCapacity(bytes.count + locations.count * 300 + 128)
            appendBatchHeader(count: locations.count, reason: reason.rawValue, id: batchID, to: &bytes)
            appendObjects(of: locations, to: &bytes)
            bytes.append(contentsOf: "]}\n".utf8)
        case .lifecycle(let message):
            appendStateFields(message.resultingState, to: &bytes)
            bytes.append(contentsOf: #","event":""#.utf8)
            bytes.append(contentsOf: message.rawValue.utf8)
            bytes.append(contentsOf: "\"}\n".utf8)
        case .applicationStopped(let reason):
            bytes.append(contentsOf: #"{"type":"stopped","reason":""#.utf8)
            bytes.append(contentsOf: StoppedReason.code(of: reason).utf8)
            bytes.append(UInt8(ascii: "\""))
            switch reason {
            case .didEnterBackgroundOverBudget(let elapsed, let budget):
                bytes.append(contentsOf: #","elapsed":"#.utf8)
                appendNumber(elapsed.seconds, to: &bytes)
                bytes.append(contentsOf: #","budget":"#.utf8)
                appendNumber(budget.seconds, to: &bytes)
            case .backgroundTaskExpired(let tasks):
                bytes.append(contentsOf: #","tasks":["#.utf8)
                for (index, task) in tasks.enumerated() {
                    if index > 0 { bytes.append(UInt8(ascii: ",")) }
                    appendString(task, to: &bytes)
                }
                bytes.append(UInt8(ascii: "]"))
            case .terminated, .exitedOnLeavingForeground, .killedWhileSuspended:
                break
            }
            bytes.append(contentsOf: #","message":"#.utf8)
            appendString("the app \(reason.description)", to: &bytes)
            bytes.append(contentsOf: "}\n".utf8)
        case .accuracyPolicy(let policy):
            bytes.append(contentsOf: #"{"type":"policy","policy":""#.utf8)
            bytes.append(contentsOf: policy.rawValue.utf8)
            bytes.append(contentsOf: "\"}\n".utf8)
        case .sourceStatus(let status):
            bytes.append(contentsOf: #"{"type":"source","status":""#.utf8)
            bytes.append(contentsOf: status.rawValue.utf8)
            bytes.append(contentsOf: "\"}\n".utf8)
        case .satellitesInView(let count):
            bytes.append(contentsOf: #"{"type":"satellites","satellitesVisible":"#.utf8)
            bytes.append(contentsOf: String(count).utf8)
            bytes.append(contentsOf: "}\n".utf8)
        case .error(let error):
            appendError(error, to: &bytes)
            bytes.append(contentsOf: "}\n".utf8)
        case .droppedHeldLocations(let count):
            appendError(droppedError(count), to: &bytes)
            bytes.append(contentsOf: #","dropped":"#.utf8)
            bytes.append(contentsOf: String(count).utf8)
            bytes.append(contentsOf: "}\n".utf8)
        case .region(let event):
            // The region's name and what happened, then the fix that caused it, as a location line has it.
            bytes.append(contentsOf: #"{"type":"region","region":"#.utf8)
            bytes.append(contentsOf: JSONText.string(event.region).utf8)
            bytes.append(contentsOf: #","event":""#.utf8)
            bytes.append(contentsOf: event.kind.rawValue.utf8)
            bytes.append(contentsOf: "\",".utf8)
            appendFields(of: event.location, to: &bytes)
            bytes.append(contentsOf: "}\n".utf8)
        case .motion(let event):
            // The new state, then the fix that decided it (for a stop, at where it stopped).
            bytes.append(contentsOf: #"{"type":"motion","state":""#.utf8)
            bytes.append(contentsOf: event.state.rawValue.utf8)
            bytes.append(contentsOf: "\",".utf8)
            appendFields(of: event.location, to: &bytes)
            bytes.append(contentsOf: "}\n".utf8)
        }
    }

    /// A state line without the event that led to it (`locationctl state --format json`, which knows only
    /// the state), ending in `\n`.
    package static func stateLine(_ state: ApplicationState) -> [UInt8] {
        var bytes: [UInt8] = []
        appendStateFields(state, to: &bytes)
        bytes.append(contentsOf: "}\n".utf8)
        return bytes
    }

    /// `{"type":"state","state":S,"executingInBackground":B,"policy":P` (without the closing brace).
    private static func appendStateFields(_ state: ApplicationState, to bytes: inout [UInt8]) {
        let background = state == .background || state == .suspended
        bytes.append(contentsOf: #"{"type":"state","state":""#.utf8)
        bytes.append(contentsOf: state.rawValue.utf8)
        bytes.append(contentsOf: #"","executingInBackground":"#.utf8)
        bytes.append(contentsOf: (background ? "true" : "false").utf8)
        bytes.append(contentsOf: #","policy":""#.utf8)
        bytes.append(contentsOf: (background ? AccuracyPolicy.reduced : .high).rawValue.utf8)
        bytes.append(UInt8(ascii: "\""))
    }

    /// The error a client that does not know `dropped` reads from a dropped-fixes line (and a person, in text).
    package static func droppedError(_ count: Int) -> LocationError {
        LocationError(.batchOverflow, "dropped the \(count) oldest held fixes: the batch was full")
    }

    /// `{"type":"error","code":C,"message":M` (without the closing brace).
    private static func appendError(_ error: LocationError, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: #"{"type":"error","code":"#.utf8)
        // Codes are extensible: one read from another daemon's line may hold anything, escaped as a string.
        appendString(error.code.rawValue, to: &bytes)
        bytes.append(contentsOf: #","message":"#.utf8)
        appendString(error.message, to: &bytes)
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

    /// A batch line whose fixes are journal records (``HeldBatchEncoding/records``), already encoded by
    /// ``appendRecords(of:to:)``.
    package static func batchLine(count: Int, reason: String, id: String?, records: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(records.count + 128)
        appendBatchHeader(count: count, reason: reason, id: id, to: &bytes, records: true)
        bytes.append(contentsOf: records)
        bytes.append(contentsOf: "\"}\n".utf8)
        return bytes
    }

    /// The locations as journal records in base64: the inside of a batch line's `records` string.
    package static func appendRecords(of locations: [Location], to bytes: inout [UInt8]) {
        var records: [UInt8] = []
        records.reserveCapacity(locations.count * 96)
        for location in locations { LocationJournal.encodeRecord(location, into: &records) }
        Base64.append(records, to: &bytes)
    }

    /// Journal records (``LocationJournal``'s, already encoded) in base64: the inside of a batch line's
    /// `records` string.
    package static func appendRecords(_ records: [UInt8], to bytes: inout [UInt8]) {
        Base64.append(records, to: &bytes)
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

    /// `{"type":"batch","count":N,"reason":R[,"id":I],"locations":[`, or with `records` `…,"records":"`
    private static func appendBatchHeader(count: Int, reason: String, id: String?, to bytes: inout [UInt8], records: Bool = false) {
        bytes.append(contentsOf: #"{"type":"batch","count":"#.utf8)
        bytes.append(contentsOf: String(count).utf8)
        bytes.append(contentsOf: #","reason":"#.utf8)
        appendString(reason, to: &bytes)
        if let id {
            bytes.append(contentsOf: #","id":"#.utf8)
            appendString(id, to: &bytes)
        }
        bytes.append(contentsOf: records ? #","records":""#.utf8 : #","locations":["#.utf8)
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
        // The fix time twice: exactly, as seconds since 1970 (what scripts compute with, and what a reader of
        // this line takes), and for people as RFC 3339 with milliseconds, always three digits (as gpsd writes).
        bytes.append(contentsOf: #","time":"#.utf8)
        RFC3339.appendSeconds(location.timestamp, to: &bytes)
        bytes.append(contentsOf: #","timestamp":""#.utf8)
        RFC3339.append(location.timestamp, fractionDigits: 3, to: &bytes)
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
