import Foundation
import LocationCore

/// One request a client sends to the daemon, as one JSON line.
///
/// Wire forms (one object per line, `\n`-terminated, UTF-8; a key the command does not take, or a `null`
/// value, is refused rather than ignored, so that a misspelt request never looks as if it worked):
///
/// | request | JSON |
/// |---|---|
/// | ``current(timeout:accuracy:maxAge:)`` | `{"command":"current","timeout":5,"accuracy":50,"maxAge":10}` (all optional; seconds, metres, seconds) |
/// | ``state(set:)`` | `{"command":"state"}` to read, `{"command":"state","set":"background"}` to change |
/// | ``status`` | `{"command":"status"}` |
/// | ``watch(batches:)`` | `{"command":"watch"}`; the connection then receives event lines (`"batches":"records"`: held batches as journal records) |
/// | ``open(app:attach:create:policy:owner:)`` | `{"command":"open","app":"tracker","attach":true,"reducedInterval":120}` (all but `app` optional) |
/// | ``apps`` | `{"command":"apps"}` |
/// | ``remove(app:owner:)`` | `{"command":"remove","app":"tracker"}` (`owner`, a uid, optional; for root) |
/// | ``acknowledge(batch:)`` | `{"command":"ack","batch":"k3x9.120"}` |
/// | ``sky(after:)`` | `{"command":"sky","after":12}` (`after` optional) |
/// | ``monitorRegion(_:)`` | `{"command":"region","add":{"identifier":"home","latitude":52.52,"longitude":13.405,"radius":150,"loiteringDelay":60}}` (`loiteringDelay` optional, seconds) |
/// | ``stopMonitoringRegion(_:)`` | `{"command":"region","remove":"home"}` |
/// | ``regions`` | `{"command":"regions"}` |
///
/// Every request acts on the connection's app: `default` until an `open` names another. Apps belong to the
/// user who opened them first: two users may each have an app of the same id, and each reaches only their own
/// (root may name another user's with `owner`).
public enum ControlRequest: Sendable, Hashable {
    /// One location: the daemon's last fix if fresh and accurate enough, else the next one.
    ///
    /// `timeout` bounds the wait; `accuracy` is the horizontal accuracy wanted, in metres; `maxAge` is the
    /// oldest a fix the daemon already has may be to be the answer (by default 2 s): never an older one.
    case current(timeout: Duration?, accuracy: Double?, maxAge: Duration? = nil)
    /// Reads the application state, or moves it to the state named by `set` (e.g. `background`).
    case state(set: String?)
    /// The daemon's status object.
    case status
    /// Turns the connection into a watcher that receives the daemon's event lines, held batches in the
    /// encoding `batches` names.
    case watch(batches: HeldBatchEncoding)
    /// Names the app the connection's later requests act on, creating its session if it is new.
    ///
    /// With `attach` the connection is the app itself: when it closes without the app having stopped, the
    /// daemon treats the app as terminated while tracking and holds its fixes until it comes back.
    ///
    /// `policy` sets the app's own policy (``AppPolicy``); what it leaves out stays as it is.
    ///
    /// With `create` false an app that does not exist is not created: the reply is `no-such-app` (a
    /// command that only reads, such as `status`, never leaves an app behind).
    ///
    /// `owner` names the user whose app it is, when it is not the caller's own: only root may.
    case open(app: String, attach: Bool = false, create: Bool = true, policy: AppPolicy = AppPolicy(), owner: UInt32? = nil)
    /// Every app session the caller may see, with each one's status.
    case apps
    /// Ends the session of the caller's app `app` (or, for root, of `owner`'s) and deletes what it held.
    case remove(app: String, owner: UInt32? = nil)
    /// Tells the daemon that the held batch with this id (the `id` of its batch line) has reached its
    /// consumer: the daemon keeps a flushed batch until a consumer of the app says so.
    case acknowledge(batch: String)
    /// The satellites the daemon's receiver sees: the newest sky view after the one numbered `after` (the
    /// `sequence` of the last reply), waiting a few seconds for it. Of the receiver, not of an app.
    case sky(after: Int = 0)
    /// Starts monitoring a region for the connection's app (replacing one of the same identifier); its
    /// events reach the app's watchers, and the daemon keeps it across restarts.
    case monitorRegion(CircularRegion)
    /// Stops monitoring the app's region with this identifier.
    case stopMonitoringRegion(String)
    /// The app's regions and their states.
    case regions

    /// `watch` with held batches as JSON location objects, as every watcher reads them by default.
    public static var watch: ControlRequest { .watch(batches: .locations) }

    /// The command names the protocol knows, in the order they are documented.
    public static let commands = ["current", "state", "status", "watch", "open", "apps", "remove", "ack", "sky", "region", "regions"]

    /// The app a connection acts on until it opens another.
    public static let defaultApp = "default"

    /// The longest app id, in bytes.
    public static let maxAppLength = 64

    /// Checks an app id: 1 to 64 of `A-Z a-z 0-9 . _ -`, not starting with `.` or `-` (it names files).
    public static func checkApp(_ app: String) throws(ControlError) {
        let bytes = Array(app.utf8)
        guard !bytes.isEmpty else { throw ControlError(.badRequest, "\"app\" must name an app, got an empty string") }
        guard bytes.count <= maxAppLength else {
            throw ControlError(.badRequest, "\"app\" is \(bytes.count) bytes long; at most \(maxAppLength) are allowed")
        }
        let allowed = { (byte: UInt8) -> Bool in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
        guard bytes.allSatisfy(allowed), bytes[0] != UInt8(ascii: "."), bytes[0] != UInt8(ascii: "-") else {
            throw ControlError(
                .badRequest,
                "\"app\" \(JSONText.string(app)) may hold only letters, digits, '.', '_' and '-', and not start with '.' or '-'")
        }
    }

    /// The request's `command` string.
    public var command: String {
        switch self {
        case .current: "current"
        case .state: "state"
        case .status: "status"
        case .watch: "watch"
        case .open: "open"
        case .apps: "apps"
        case .remove: "remove"
        case .acknowledge: "ack"
        case .sky: "sky"
        case .monitorRegion, .stopMonitoringRegion: "region"
        case .regions: "regions"
        }
    }

    /// Decodes one request line (without its `\n`; a trailing `\r` is tolerated).
    ///
    /// - Throws: ``ControlError`` with code `bad-request` for invalid UTF-8, JSON that is not an object,
    ///   or a field of the wrong type or range, and `unknown-command` when `command` is missing or unknown.
    public init(line: some Collection<UInt8>) throws(ControlError) {
        var bytes = Array(line)
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        guard String(validating: bytes, as: UTF8.self) != nil else {
            throw ControlError(.badRequest, "request is not valid UTF-8")
        }
        let wire: Wire
        do {
            wire = try JSONDecoder().decode(Wire.self, from: Data(bytes))
        } catch let error as DecodingError {
            throw ControlError(.badRequest, Self.describe(error))
        } catch {
            throw ControlError(.badRequest, "request is not a JSON object: \(error)")
        }
        guard let command = wire.command else {
            throw ControlError(
                .unknownCommand,
                "request has no \"command\"; expected one of \(Self.commands.joined(separator: ", "))")
        }
        if let keys = Self.keys[command] {
            try Self.checkKeys(of: bytes, command: command, allowed: keys)
        }
        switch command {
        case "current":
            var timeout: Duration?
            if let seconds = wire.timeout {
                do throws(LocationError) {
                    timeout = try ValueRange.requestTimeout.duration(seconds: seconds, for: "\"timeout\"")
                } catch {
                    throw ControlError(.badRequest, error.message)
                }
            }
            if let accuracy = wire.accuracy {
                do throws(LocationError) { _ = try ValueRange.distance.value(accuracy, for: "\"accuracy\"") } catch {
                    throw ControlError(.badRequest, error.message)
                }
            }
            var maxAge: Duration?
            if let seconds = wire.maxAge {
                do throws(LocationError) {
                    maxAge = try ValueRange.maximumAge.duration(seconds: seconds, for: "\"maxAge\"")
                } catch {
                    throw ControlError(.badRequest, error.message)
                }
            }
            self = .current(timeout: timeout, accuracy: wire.accuracy, maxAge: maxAge)
        case "state":
            if let target = wire.set, target.isEmpty {
                throw ControlError(.badRequest, "\"set\" must name a state, got an empty string")
            }
            self = .state(set: wire.set)
        case "status":
            self = .status
        case "watch":
            guard let name = wire.batches else {
                self = .watch
                break
            }
            guard let encoding = HeldBatchEncoding(rawValue: name) else {
                throw ControlError(.badRequest, "\"batches\" \"\(ValueRange.printable(name))\" is not an encoding; use locations or records")
            }
            self = .watch(batches: encoding)
        case "open":
            guard let app = wire.app else { throw ControlError(.badRequest, "\"open\" needs \"app\", the app's id") }
            try Self.checkApp(app)
            var policy = AppPolicy(backgroundLocation: wire.backgroundLocation, updates: wire.updates)
            do throws(LocationError) {
                if let value = wire.accuracy { policy.desiredAccuracy = try ValueRange.distance.value(value, for: "\"accuracy\"") }
                if let value = wire.distanceFilter {
                    policy.distanceFilter = try ValueRange.distance.value(value, for: "\"distanceFilter\"")
                }
                if let value = wire.reducedInterval {
                    policy.reducedInterval = try ValueRange.backgroundInterval.value(value, for: "\"reducedInterval\"")
                }
                if let value = wire.reducedAccuracy {
                    policy.reducedAccuracy = try ValueRange.distance.value(value, for: "\"reducedAccuracy\"")
                }
            } catch {
                throw ControlError(.badRequest, error.message)
            }
            self = .open(
                app: app, attach: wire.attach ?? false, create: wire.create ?? true, policy: policy,
                owner: try Self.owner(wire.owner))
        case "apps":
            self = .apps
        case "remove":
            guard let app = wire.app else { throw ControlError(.badRequest, "\"remove\" needs \"app\", the app's id") }
            try Self.checkApp(app)
            self = .remove(app: app, owner: try Self.owner(wire.owner))
        case "ack":
            guard let batch = wire.batch, !batch.isEmpty else {
                throw ControlError(.badRequest, "\"ack\" needs \"batch\", the id of the batch line it acknowledges")
            }
            guard batch.utf8.count <= 64 else {
                throw ControlError(.badRequest, "\"batch\" is \(batch.utf8.count) bytes long; a batch id is at most 64")
            }
            self = .acknowledge(batch: batch)
        case "sky":
            let after = wire.after ?? 0
            guard after.rounded() == after, after >= 0, after <= 1e15 else {
                throw ControlError(.badRequest, "\"after\" \(JSONText.number(after)) is not a view's sequence number; use a whole number from 0")
            }
            self = .sky(after: Int(after))
        case "region":
            switch (wire.add, wire.remove) {
            case (let region?, nil):
                self = .monitorRegion(region)
            case (nil, let identifier?):
                guard !identifier.isEmpty, identifier.utf8.count <= CircularRegion.maximumIdentifierLength else {
                    throw ControlError(.badRequest, "\"remove\" names a region: an identifier of 1 to \(CircularRegion.maximumIdentifierLength) bytes")
                }
                self = .stopMonitoringRegion(identifier)
            default:
                throw ControlError(.badRequest, "\"region\" takes either \"add\" (a region) or \"remove\" (an identifier)")
            }
        case "regions":
            self = .regions
        default:
            throw ControlError(
                .unknownCommand,
                "unknown command \"\(command)\"; expected one of \(Self.commands.joined(separator: ", "))")
        }
    }

    /// The request as one JSON line ending in `\n`, as a client sends it.
    public var jsonLine: [UInt8] {
        var text = "{\"command\":\"\(command)\""
        switch self {
        case .current(let timeout, let accuracy, let maxAge):
            if let timeout {
                text += ",\"timeout\":\(JSONText.number(timeout.seconds))"
            }
            if let accuracy { text += ",\"accuracy\":\(JSONText.number(accuracy))" }
            if let maxAge { text += ",\"maxAge\":\(JSONText.number(maxAge.seconds))" }
        case .state(let target):
            if let target { text += ",\"set\":\(JSONText.string(target))" }
        case .open(let app, let attach, let create, let policy, let owner):
            text += ",\"app\":\(JSONText.string(app))"
            if attach { text += ",\"attach\":true" }
            if !create { text += ",\"create\":false" }
            text += policy.jsonMembers
            if let owner { text += ",\"owner\":\(owner)" }
        case .remove(let app, let owner):
            text += ",\"app\":\(JSONText.string(app))"
            if let owner { text += ",\"owner\":\(owner)" }
        case .acknowledge(let batch):
            text += ",\"batch\":\(JSONText.string(batch))"
        case .sky(let after):
            if after > 0 { text += ",\"after\":\(after)" }
        case .monitorRegion(let region):
            text += ",\"add\":{\"identifier\":\(JSONText.string(region.identifier)),\"latitude\":\(JSONText.number(region.latitude))"
                + ",\"longitude\":\(JSONText.number(region.longitude)),\"radius\":\(JSONText.number(region.radius))"
                + (region.loiteringDelay.map { ",\"loiteringDelay\":\(JSONText.number($0.seconds))" } ?? "") + "}"
        case .stopMonitoringRegion(let identifier):
            text += ",\"remove\":\(JSONText.string(identifier))"
        case .watch(let encoding):
            if encoding != .locations { text += ",\"batches\":\"\(encoding.rawValue)\"" }
        case .status, .apps, .regions:
            break
        }
        text += "}\n"
        return Array(text.utf8)
    }

    /// The keys each command takes.
    private static let keys: [String: [String]] = [
        "current": ["command", "timeout", "accuracy", "maxAge"], "state": ["command", "set"],
        "status": ["command"], "watch": ["command", "batches"], "open": ["command", "app", "attach", "create", "accuracy", "distanceFilter", "reducedInterval", "reducedAccuracy", "backgroundLocation", "updates", "owner"], "apps": ["command"],
        "remove": ["command", "app", "owner"],
        "ack": ["command", "batch"],
        "sky": ["command", "after"],
        "region": ["command", "add", "remove"],
        "regions": ["command"],
    ]

    /// Refuses a key the command does not take (`{"command":"state","state":"suspended"}` would otherwise
    /// read the state and answer success) and a key whose value is `null`.
    private static func checkKeys(of bytes: [UInt8], command: String, allowed: [String]) throws(ControlError) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else { return }
        if let unknown = object.keys.sorted().first(where: { !allowed.contains($0) }) {
            let takes = allowed.dropFirst().map { "\"\($0)\"" }
            throw ControlError(
                .badRequest,
                "\"\(command)\" takes no \"\(unknown)\""
                    + (takes.isEmpty ? "; it takes no other key" : "; it takes \(takes.dropLast().joined(separator: ", "))\(takes.count > 1 ? " and " : "")\(takes.last!)"))
        }
        if let null = object.keys.sorted().first(where: { object[$0] is NSNull }) {
            throw ControlError(.badRequest, "\"\(null)\" must not be null; leave it out instead")
        }
        // A region's own keys, as strictly: a misspelt "loiteringdelay" would otherwise add a region without
        // the dwell its client believes it asked for.
        if command == "region", let add = object["add"] {
            guard let region = add as? [String: Any] else {
                throw ControlError(.badRequest, "\"add\" is a region: an object with \"identifier\", \"latitude\", \"longitude\", \"radius\" and optionally \"loiteringDelay\"")
            }
            let keys = ["identifier", "latitude", "longitude", "radius", "loiteringDelay"]
            if let unknown = region.keys.sorted().first(where: { !keys.contains($0) }) {
                throw ControlError(.badRequest, "a region takes no \"\(ValueRange.printable(unknown))\"; it takes \"identifier\", \"latitude\", \"longitude\", \"radius\" and \"loiteringDelay\"")
            }
            if let null = region.keys.sorted().first(where: { region[$0] is NSNull }) {
                throw ControlError(.badRequest, "a region's \"\(null)\" must not be null; leave it out instead")
            }
        }
    }

    /// The fields a request line may carry.
    private struct Wire: Decodable {
        var command: String?
        var timeout: Double?
        var accuracy: Double?
        var set: String?
        var app: String?
        var attach: Bool?
        var create: Bool?
        var distanceFilter: Double?
        var reducedInterval: Double?
        var reducedAccuracy: Double?
        var backgroundLocation: Bool?
        var updates: Bool?
        var batch: String?
        var owner: Double?
        var after: Double?
        var maxAge: Double?
        var add: CircularRegion?
        var remove: String?
        var batches: String?
    }

    /// Checks an `owner`: a user id, a whole number from 0 to 4294967294 (4294967295 is no user).
    private static func owner(_ value: Double?) throws(ControlError) -> UInt32? {
        guard let value else { return nil }
        guard value.rounded() == value, value >= 0, value < Double(UInt32.max) else {
            throw ControlError(.badRequest, "\"owner\" \(JSONText.number(value)) is not a user id; use a whole number from 0 to 4294967294")
        }
        return UInt32(value)
    }

    /// One line for a person out of a decoding error.
    private static func describe(_ error: DecodingError) -> String {
        switch error {
        case .typeMismatch(let type, let context):
            if let key = context.codingPath.last?.stringValue {
                return "\"\(key)\" has the wrong type; expected \(type == Double.self ? "a number" : type == Bool.self ? "true or false" : "a string")"
            }
            return "request must be a JSON object"
        case .dataCorrupted(let context):
            if let underlying = context.underlyingError {
                return "malformed JSON: \((underlying as NSError).userInfo[NSDebugDescriptionErrorKey] ?? underlying)"
            }
            if let key = context.codingPath.last?.stringValue { return "\"\(key)\": \(context.debugDescription)" }
            return "malformed JSON: \(context.debugDescription)"
        case .valueNotFound(_, let context):
            guard let key = context.codingPath.last?.stringValue else {
                return "request is null; expected a JSON object such as {\"command\":\"status\"}"
            }
            return "\"\(key)\" must not be null"
        case .keyNotFound(let key, _):
            return "missing \"\(key.stringValue)\""
        @unknown default:
            return "malformed request"
        }
    }
}
