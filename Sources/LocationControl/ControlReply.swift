import Foundation
import LocationCore

/// The daemon's answer to one ``ControlRequest``, already encoded as one JSON line.
///
/// Every reply is one JSON object on one line:
/// - success: `{"ok":true, ...fields}`
/// - failure: `{"ok":false,"error":{"code":"...","message":"..."}}`
///
/// | request | success reply |
/// |---|---|
/// | `current` | `{"ok":true,"location":{...Location JSON...}}` (``location(_:)``) |
/// | `state` | `{"ok":true,"state":"active","executingInBackground":false,"policy":"high"}` (``state(_:executingInBackground:policy:)``) |
/// | `status` | `{"ok":true,"status":{...}}` (``status(_:)`` or ``status(json:)``) |
/// | `watch` | `{"ok":true,"watching":true}`, then event lines (``watching(then:)``) |
/// | `sky` | `{"ok":true,"sequence":7,"sky":{...SkyViewJSON...}}` (``sky(_:sequence:problem:)``) |
package struct ControlReply: Sendable, Hashable {
    /// The encoded reply, one JSON object ending in `\n`.
    package let line: [UInt8]
    /// Whether this is an `"ok":true` reply.
    package let isSuccess: Bool
    /// Event lines queued right after a successful `watch` reply, before any broadcast.
    let followUp: [[UInt8]]
    /// A held batch queued after `followUp`, whole (its lines, and how many fixes it has).
    let heldBatch: HeldBatchLines?

    /// A held batch's lines, queued as one unit.
    struct HeldBatchLines: Sendable, Hashable {
        var lines: [UInt8]
        var count: Int
    }

    private init(line: [UInt8], isSuccess: Bool, followUp: [[UInt8]] = [], heldBatch: HeldBatchLines? = nil) {
        self.line = line
        self.isSuccess = isSuccess
        self.followUp = followUp
        self.heldBatch = heldBatch
    }

    /// The reply text without its trailing newline.
    package var text: String {
        String(decoding: line.dropLast(line.last == UInt8(ascii: "\n") ? 1 : 0), as: UTF8.self)
    }

    /// `{"ok":true,"location":{...}}`: the answer to `current`, the location in the one encoding the
    /// protocol uses for it everywhere (``JSONLineEncoder/object(_:)``), as in watch events.
    package static func location(_ location: Location) -> ControlReply {
        member("location", json: JSONLineEncoder.object(location))
    }

    /// `{"ok":true,"state":…,"executingInBackground":…,"policy":…}`: the answer to `state`.
    package static func state(
        _ state: ApplicationState, executingInBackground: Bool, policy: AccuracyPolicy
    ) -> ControlReply {
        let text = "{\"ok\":true,\"state\":\(JSONText.string(state.rawValue)),"
            + "\"executingInBackground\":\(executingInBackground),\"policy\":\(JSONText.string(policy.rawValue))}\n"
        return ControlReply(line: Array(text.utf8), isSuccess: true)
    }

    /// `{"ok":true,"status":{...}}` with `status` encoded as the object.
    ///
    /// If `status` does not encode to a JSON object the reply is a failure with code `internal`.
    package static func status(_ status: some Encodable) -> ControlReply {
        member("status", encoding: status)
    }

    /// `{"ok":true,"status":{...}}` for the daemon's status: its last fix in the protocol's one location
    /// encoding (``JSONLineEncoder/object(_:)``), the rest encoded as keys sorted.
    package static func status(_ status: DaemonStatus) -> ControlReply {
        var rest = status
        rest.lastFix = nil
        guard let encoded = try? encoder.encode(rest), encoded.first == UInt8(ascii: "{") else {
            return failure(.internalError, "the daemon could not encode \"status\"")
        }
        guard let fix = status.lastFix else { return member("status", json: Array(encoded)) }
        var object = Array(#"{"lastFix":"#.utf8) + JSONLineEncoder.object(fix)
        if encoded.count > 2 { object.append(UInt8(ascii: ",")) }
        object += encoded.dropFirst()
        return member("status", json: object)
    }

    /// `{"ok":true,"apps":[{...},...]}`: the answer to `apps`, each app's status as in ``status(_:)``.
    package static func apps(_ statuses: [DaemonStatus]) -> ControlReply {
        var list: [UInt8] = [UInt8(ascii: "[")]
        for (index, status) in statuses.enumerated() {
            let one = Self.status(status)
            guard one.isSuccess else { return one }
            // The status reply is {"ok":true,"status":OBJECT}\n: take OBJECT.
            let prefix = Array(#"{"ok":true,"status":"#.utf8)
            let object = one.line.dropFirst(prefix.count).dropLast(2)
            if index > 0 { list.append(UInt8(ascii: ",")) }
            list += object
        }
        list.append(UInt8(ascii: "]"))
        return ControlReply(line: Array(#"{"ok":true,"apps":"#.utf8) + list + Array("}\n".utf8), isSuccess: true)
    }

    /// `{"ok":true,"app":…,"created":…,"state":…,"policy":…}`: the answer to `open`.
    package static func opened(app: String, created: Bool, state: ApplicationState, policy: AccuracyPolicy) -> ControlReply {
        let text = "{\"ok\":true,\"app\":\(JSONText.string(app)),\"created\":\(created),"
            + "\"state\":\(JSONText.string(state.rawValue)),\"policy\":\(JSONText.string(policy.rawValue))}\n"
        return ControlReply(line: Array(text.utf8), isSuccess: true)
    }

    /// `{"ok":true,"status":{...}}` with a pre-encoded JSON object.
    ///
    /// Line breaks in `json` (legal only as whitespace between tokens) become spaces so the reply stays one
    /// line. If `json` is not an object (`{...}`) the reply is a failure with code `internal`.
    package static func status(json: [UInt8]) -> ControlReply {
        member("status", json: json)
    }

    /// `{"ok":true,"sequence":N,"sky":{...}}`: the answer to `sky`, the view as `SkyViewJSON` writes it,
    /// or `"sky":null` while there is none newer than the request's `after`.
    /// `problem` says why no view is coming now (gpsd went away, and the daemon reconnects).
    package static func sky(_ view: SkyView?, sequence: Int, problem: String? = nil) -> ControlReply {
        let text = "{\"ok\":true,\"sequence\":\(sequence),\"sky\":\(view.map(SkyViewJSON.object) ?? "null")"
            + (problem.map { ",\"problem\":\(JSONText.string($0))" } ?? "") + "}\n"
        return ControlReply(line: Array(text.utf8), isSuccess: true)
    }

    /// `{"ok":true,"watching":true}`: the answer to `watch`; `lines` are queued to the watcher right after it.
    ///
    /// Use `lines` for what a new watcher should see first (the current state, a flushed batch); they are queued
    /// in the same step as the reply, so no broadcast can come between. Each line is one JSON object ending in `\n`.
    package static func watching(then lines: [[UInt8]] = []) -> ControlReply {
        ControlReply(line: Array("{\"ok\":true,\"watching\":true}\n".utf8), isSuccess: true, followUp: lines)
    }

    /// `{"ok":true,"watching":true}`, then `lines`, then a held batch (its batch line and `count` location
    /// lines) queued whole, whatever its size.
    package static func watching(then lines: [[UInt8]], heldBatch: [UInt8], count: Int) -> ControlReply {
        ControlReply(
            line: Array("{\"ok\":true,\"watching\":true}\n".utf8), isSuccess: true, followUp: lines,
            heldBatch: HeldBatchLines(lines: heldBatch, count: count))
    }

    /// `{"ok":true,"watching":true}` with nothing queued after it.
    package static var watching: ControlReply { watching() }

    /// `{"ok":true, ...}` with the members of `value`, which must encode to a JSON object.
    ///
    /// `value`'s own `ok` key, if any, is not removed; do not define one.
    package static func success(_ value: some Encodable) -> ControlReply {
        guard let json = try? encoder.encode(value) else {
            return failure(.internalError, "the daemon could not encode its reply")
        }
        let bytes = Self.singleLine(Array(json))
        guard let open = bytes.firstIndex(of: UInt8(ascii: "{")), bytes.last == UInt8(ascii: "}") else {
            return failure(.internalError, "the daemon's reply is not a JSON object")
        }
        let inner = bytes[(open + 1)..<(bytes.count - 1)]
        let isEmpty = inner.allSatisfy { $0 == UInt8(ascii: " ") }
        var line = Array("{\"ok\":true".utf8)
        if !isEmpty { line.append(UInt8(ascii: ",")) }
        line += inner
        line += Array("}\n".utf8)
        return ControlReply(line: line, isSuccess: true)
    }

    /// `{"ok":false,"error":{"code":…,"message":…}}`.
    package static func failure(_ code: ControlError.Code, _ message: String) -> ControlReply {
        ControlReply(line: JSONText.failureLine(code: code.rawValue, message: message), isSuccess: false)
    }

    /// A failure reply carrying a control error's code and message.
    package static func failure(_ error: ControlError) -> ControlReply {
        failure(error.code, error.message)
    }

    /// A failure reply carrying a location error's code (e.g. `no-fix`) and message.
    package static func failure(_ error: LocationError) -> ControlReply {
        failure(ControlError.Code(error.code), error.message)
    }

    // MARK: - Encoding

    /// The encoder for reply members: compact, keys sorted so replies are byte-for-byte reproducible, slashes
    /// unescaped so paths stay readable.
    private static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    private static func member(_ key: String, encoding value: some Encodable) -> ControlReply {
        guard let json = try? encoder.encode(value) else {
            return failure(.internalError, "the daemon could not encode \"\(key)\"")
        }
        return member(key, json: Array(json))
    }

    private static func member(_ key: String, json: [UInt8]) -> ControlReply {
        let object = singleLine(json)
        guard object.first == UInt8(ascii: "{"), object.last == UInt8(ascii: "}") else {
            return failure(.internalError, "the daemon's \"\(key)\" is not a JSON object")
        }
        var line = Array("{\"ok\":true,\(JSONText.string(key)):".utf8)
        line.reserveCapacity(line.count + object.count + 2)
        line += object
        line += Array("}\n".utf8)
        return ControlReply(line: line, isSuccess: true)
    }

    /// `json` trimmed, with CR and LF (only ever whitespace between JSON tokens) turned into spaces.
    private static func singleLine(_ json: [UInt8]) -> [UInt8] {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        guard let first = json.firstIndex(where: { !isSpace($0) }),
            let last = json.lastIndex(where: { !isSpace($0) })
        else { return [] }
        return json[first...last].map { $0 == 0x0A || $0 == 0x0D ? 0x20 : $0 }
    }
}
