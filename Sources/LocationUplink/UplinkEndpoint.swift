import Foundation
import LocationCore

/// Where an uplink sends the fixes and how, read from its URL (`--uplink`, the YAML `uplinks:` list):
///
/// `mqtt://[USER@]HOST[:PORT]/OTUSER/OTDEVICE?format=owntracks` (or `mqtts://`, with `ca-file=`) publishes
/// OwnTracks JSON on `owntracks/OTUSER/OTDEVICE`; `mqtt://HOST/DEVICE?format=homeassistant` a Home Assistant
/// device tracker; `http(s)://[USER@]HOST[:PORT]/PATH?format=owntracks&user=U&device=D` posts OwnTracks JSON
/// to a Recorder (`/pub`); `http(s)://HOST[:PORT]/?format=traccar&id=DEVICE` posts Traccar's OsmAnd JSON.
/// Query keys: `interval` (seconds between fixes, 0 for every fix), `distance` and `accuracy` (metres),
/// `window` (MQTT messages in flight), `queue` (the most fixes the outbox keeps), `password-file` (the
/// password, first line of the file), `ca-file`, `tid`, and for HTTP `user`, `device` or `id`, and `timeout`.
///
/// Every part is checked here, once: a bad URL is one line naming the part, and nothing starts.
package struct UplinkEndpoint: Sendable, Hashable {
    /// The receiver's format.
    package enum Format: String, Sendable, Hashable, CaseIterable {
        /// OwnTracks JSON on `owntracks/USER/DEVICE`: every fix, from the outbox, oldest first.
        case owntracks
        /// Home Assistant's MQTT discovery of a device tracker: the latest fix only, never a backlog.
        case homeassistant
        /// Traccar's OsmAnd protocol, a JSON body per fix (HTTP only): every fix, from the outbox, oldest first.
        case traccar
    }

    package var format: Format
    package var host: String
    package var port: Int
    /// Whether the connection uses TLS (`mqtts://`, `https://`).
    package var usesTLS: Bool
    /// Whether the receiver is an HTTP server (`http://`, `https://`) rather than an MQTT broker.
    package var usesHTTP: Bool
    /// The HTTP path posted to (`/pub` for the OwnTracks Recorder); `/` for MQTT.
    package var path = "/"
    package var username: String?
    package var passwordFile: String?
    package var caFile: String?
    /// The OwnTracks user and device: the topic is `owntracks/USER/DEVICE`. For Traccar, `device` is the
    /// device's identifier (`id=`).
    package var user: String
    package var device: String
    /// The two-character tracker id OwnTracks shows (default: the device's last two characters).
    package var trackerID: String
    /// Seconds between fixes sent; 0 sends every fix the receiver delivers.
    package var interval: Double = 0
    /// Metres the position must move before another fix is sent; `nil` for no distance filter.
    package var distance: Double?
    /// Fixes reported worse than this many metres are not sent; `nil` for any accuracy.
    package var accuracy: Double?
    /// The most messages sent and not yet acknowledged: a crash repeats at most this many.
    package var window = 10
    /// The most fixes the outbox keeps; past it the oldest are dropped, and counted.
    package var queue = 100_000
    /// Fixes more than this many seconds older than the newest are dropped from the outbox; `nil` for no bound.
    package var maxAge: Double?
    /// Seconds an HTTP exchange may take before it counts as failed (a server that accepts and never answers).
    package var timeout = 30.0

    /// The URL as given, with nothing secret in it (it never holds a password): for logs and status.
    package let text: String

    /// The MQTT topic the locations go to: `owntracks/USER/DEVICE`, or the Home Assistant tracker's
    /// attributes topic, `locationd/DEVICE/attributes`.
    package var topic: String {
        switch format {
        case .owntracks: "owntracks/\(user)/\(device)"
        case .homeassistant: "locationd/\(device)/attributes"
        case .traccar: ""
        }
    }

    /// The URL an HTTP uplink posts to: the scheme, host, port and path, and for OwnTracks the Recorder's
    /// `u` and `d` (it also reads the `X-Limit-U` and `X-Limit-D` headers, which are sent too).
    /// The host as a resolver takes it: an IPv6 address without its brackets.
    package var addressHost: String {
        // URLComponents gives the zone decoded (`[fe80::1%eth0]`), as getaddrinfo takes it.
        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }

    /// What makes two uplinks the same receiver, user and device however the host is spelt (`Broker.` and
    /// `broker`): the configuration refuses two such uplinks.
    package var sameReceiverKey: String {
        var spelt = host.lowercased()
        if spelt.hasSuffix("."), spelt.count > 1 { spelt.removeLast() }
        return [format.rawValue, user, device, spelt, String(port), usesHTTP ? (usesTLS ? "https" : "http") + path : ""].joined(separator: "\u{0}")
    }

    package var requestURL: String {
        var components = URLComponents()
        components.scheme = usesTLS ? "https" : "http"
        components.host = host
        components.port = port
        components.percentEncodedPath = path
        if format == .owntracks { components.queryItems = [URLQueryItem(name: "u", value: user), URLQueryItem(name: "d", value: device)] }
        return components.string ?? ""
    }

    /// A name for files and status: the URL's parts as people read them (`owntracks-USER-DEVICE@HOST-PORT`,
    /// `homeassistant-DEVICE@HOST-PORT`, other characters as `_`, at most 100), then a hash of the exact parts,
    /// so that two uplinks whose parts differ never share a name, an outbox or a client id.
    package var name: String {
        let readable = format == .owntracks ? "\(format.rawValue)-\(user)-\(device)@\(host)-\(port)" : "\(format.rawValue)-\(device)@\(host)-\(port)"
        let shown = String(readable.map { $0.isASCII && ($0.isLetter || $0.isNumber || "-_.@".contains($0)) ? $0 : "_" }.prefix(100))
        return shown + "-" + identity
    }

    /// 16 hexadecimal digits of a hash (FNV-1a, 64 bits) of the format, user, device, host and port (and for
    /// HTTP its scheme and path): the same in every run and version.
    package var identity: String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        var parts = [format.rawValue, user, device, host, String(port)]
        if usesHTTP { parts += [usesTLS ? "https" : "http", path] }
        for byte in parts.joined(separator: "\u{0}").utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The MQTT client id: `locationd` and 14 digits of ``identity`` (23 characters, letters and digits, as
    /// every broker must take): two uplinks never knock each other off the broker.
    package var clientID: String { "locationd" + identity.prefix(14) }

    static let intervalRange = ValueRange(0...604_800, unit: "s")
    static let windowRange = ValueRange(1...1000, unit: "messages")
    static let queueRange = ValueRange(1...10_000_000, unit: "fixes")
    static let timeoutRange = ValueRange(1...300, unit: "s")
    static let maxAgeRange = ValueRange(60...31_622_400, unit: "s")
    /// The longest topic part taken: a topic is at most 65,535 bytes, and a receiver's file names are made of them.
    static let longestPart = 128

    private static let keys = [
        "format", "interval", "distance", "accuracy", "window", "queue", "max-age", "password-file", "ca-file", "tid", "user", "device", "id",
        "timeout",
    ]

    /// Parses and checks `text`.
    ///
    /// - Parameter place: Where the URL came from (`--uplink`, `FILE: uplinks[2]`), for the message.
    /// - Throws: ``LocationError/Code/invalidConfiguration`` naming the place and the part that is wrong.
    package init(parsing given: String, place: String = "--uplink") throws(LocationError) {
        // Spaces around it are a slip of the hand (a YAML line, a copied command); inside, a URL has none.
        let text = given.trimmingCharacters(in: .whitespacesAndNewlines)
        func refuse(_ reason: String) -> LocationError {
            LocationError(.invalidConfiguration, "\(place): \(reason) (in '\(ValueRange.printable(Self.redacted(text), limit: 200))')")
        }
        if text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            throw refuse("the URL holds a control character")
        }
        if text.contains(" ") { throw refuse("the URL holds a space; write %20 where one is meant") }
        guard let schemeEnd = text.range(of: "://") else {
            throw refuse("not a URL; write mqtt://HOST/USER/DEVICE?format=owntracks")
        }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        switch scheme {
        case "mqtt": (usesTLS, usesHTTP) = (false, false)
        case "mqtts": (usesTLS, usesHTTP) = (true, false)
        case "http": (usesTLS, usesHTTP) = (false, true)
        case "https": (usesTLS, usesHTTP) = (true, true)
        default:
            throw refuse("the scheme '\(ValueRange.printable(scheme))' is not one an uplink speaks; use mqtt://, mqtts://, http:// or https://")
        }
        // An @ after the host: a user name or password holding /, ? or #, which would be read as host and path.
        let afterScheme = text[schemeEnd.upperBound...]
        if let pathStart = afterScheme.firstIndex(where: { "/?#".contains($0) }),
            afterScheme[pathStart...].prefix(while: { $0 != "?" && $0 != "#" }).contains("@")
        {
            throw refuse("an @ after the host (a user name or password with /, ? or # in it?); put the password in a file and give password-file=PATH, and write @ in a path as %40")
        }
        guard let components = URLComponents(string: text) else { throw refuse("not a valid URL") }
        if components.password != nil {
            throw refuse("a password in the URL would show in ps and logs; put it in a file and give password-file=PATH")
        }
        if let user = components.user {
            guard !user.isEmpty else { throw refuse("the user name before @ is empty") }
            // user%3Apassword@ decodes to a password all the same.
            if user.contains(":") {
                throw refuse("the user name holds ':', which makes the rest a password; put the password in a file and give password-file=PATH")
            }
            username = user
        }
        guard let host = components.host, !host.isEmpty else { throw refuse("the host is missing") }
        guard host.count <= 253 else { throw refuse("the host is longer than 253 characters") }
        self.host = host
        // The port as written: URLComponents gives none for one too large for an Int, which would be the default.
        let rest = text[schemeEnd.upperBound...]
        var authority = rest[..<(rest.firstIndex { "/?#".contains($0) } ?? rest.endIndex)]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        let afterHost = authority.hasPrefix("[") ? authority[(authority.firstIndex(of: "]") ?? authority.startIndex)...].dropFirst() : authority[...]
        // The host as written: a name or IPv4 address (letters, digits, '-', '.', '_'), or an IPv6 address in
        // brackets. Anything else (%2F, %00, [zz]) would pass here and fail at every attempt to connect.
        let writtenHost =
            authority.hasPrefix("[") ? authority[..<afterHost.startIndex] : authority[..<(authority.firstIndex(of: ":") ?? authority.endIndex)]
        guard Self.isHost(writtenHost) else {
            throw refuse("the host '\(ValueRange.printable(writtenHost))' is not a host name, an IPv4 address or an IPv6 address in brackets (a name with other letters goes in its xn-- form)")
        }
        if let colon = afterHost.lastIndex(of: ":") {
            let written = afterHost[afterHost.index(after: colon)...]
            guard let number = Int(written), (1...65_535).contains(number), String(number) == written else {
                throw refuse("the port '\(ValueRange.printable(written))' is not a number in 1…65535")
            }
            port = number
        } else {
            port = usesHTTP ? (usesTLS ? 443 : 80) : (usesTLS ? 8883 : 1883)
        }
        if components.fragment != nil { throw refuse("a URL fragment (#…) means nothing to an uplink") }

        format = .owntracks
        user = ""
        device = ""
        trackerID = ""
        self.text = text
        var seen = Set<String>()
        var named: [String: String] = [:]
        for item in components.queryItems ?? [] {
            let name = item.name
            guard Self.keys.contains(name) else {
                throw refuse("unknown key '\(ValueRange.printable(name))'; the keys are \(Self.keys.joined(separator: ", "))")
            }
            guard seen.insert(name).inserted else { throw refuse("the key \(name) is given twice") }
            guard let value = item.value, !value.isEmpty else { throw refuse("the key \(name) has no value") }
            let where_ = "\(place) \(name) (in '\(ValueRange.printable(Self.redacted(text), limit: 200))')"
            switch name {
            case "format":
                guard let format = Format(rawValue: value) else {
                    throw refuse("the format '\(ValueRange.printable(value))' is not known; use \(Format.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                self.format = format
            case "interval": interval = try Self.intervalRange.value(parsing: value, for: where_)
            case "distance": distance = try ValueRange.distance.value(parsing: value, for: where_)
            case "accuracy": accuracy = try ValueRange.distance.value(parsing: value, for: where_)
            case "queue": queue = Int(try Self.whole(value, Self.queueRange, where_))
            case "max-age": maxAge = try Self.maxAgeRange.value(parsing: value, for: where_)
            case "password-file", "ca-file":
                guard value.utf8.count < Int(PATH_MAX) else { throw refuse("the \(name) path is longer than \(PATH_MAX - 1) bytes") }
                // Decoded from %XX: a NUL would cut the path short, a newline would break a log line.
                if value.unicodeScalars.contains(where: Self.isUnfitForTopics) {
                    throw refuse("the \(name) path holds a control character")
                }
                if name == "password-file" { passwordFile = value } else { caFile = value }
            case "tid":
                guard value.count == 2, value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
                    throw refuse("tid must be two letters or digits")
                }
                trackerID = value
            case "timeout":
                guard usesHTTP else { throw refuse("timeout is for http:// and https://") }
                timeout = try Self.timeoutRange.value(parsing: value, for: where_)
            case "user", "device", "id":
                guard usesHTTP else {
                    throw refuse("the key \(name) is for http:// and https://; an MQTT uplink names its user and device in its path")
                }
                named[name] = value
            case "window":
                guard !usesHTTP else {
                    throw refuse("window is for MQTT: an HTTP uplink posts one fix at a time and waits for its answer")
                }
                window = Int(try Self.whole(value, Self.windowRange, where_))
            default: break
            }
        }
        // The path, as the format reads it.
        let parts = components.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        if usesHTTP {
            window = 1
            path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
            switch format {
            case .owntracks:
                for key in ["user", "device"] where named[key] == nil {
                    throw refuse("OwnTracks over HTTP needs user= and device= (the Recorder files fixes under them)")
                }
                if named["id"] != nil { throw refuse("id is for format=traccar; OwnTracks takes user= and device=") }
            case .traccar:
                guard named["id"] != nil else { throw refuse("Traccar needs id=DEVICE, the device's identifier in Traccar") }
                if named["user"] != nil || named["device"] != nil {
                    throw refuse("user and device are for format=owntracks; Traccar takes id=")
                }
            case .homeassistant:
                throw refuse("Home Assistant's device trackers are reached over MQTT (mqtt://HOST/DEVICE?format=homeassistant)")
            }
            for (key, value) in named.sorted(by: { $0.key < $1.key }) {
                if value.unicodeScalars.contains(where: Self.isUnfitForTopics) {
                    throw refuse("the \(key) '\(ValueRange.printable(value))' holds a control character or a noncharacter")
                }
                if value.utf8.count > Self.longestPart { throw refuse("the \(key) is longer than \(Self.longestPart) bytes") }
                if format == .owntracks, value.contains(where: { "+#/".contains($0) }) {
                    throw refuse("the \(key) '\(ValueRange.printable(value))' holds +, # or /, which an OwnTracks topic part cannot")
                }
            }
            user = named["user"] ?? ""
            device = named["device"] ?? named["id"] ?? ""
        } else {
            switch format {
            case .traccar:
                throw refuse("Traccar is reached over HTTP: http://HOST:5055/?format=traccar&id=DEVICE")
            case .owntracks:
                guard parts.count == 2, let user = parts.first, let device = parts.last, !user.isEmpty, !device.isEmpty else {
                    throw refuse("the path must be /USER/DEVICE (the OwnTracks topic owntracks/USER/DEVICE)")
                }
                for (name, part) in [("user", user), ("device", device)] {
                    if part.contains(where: { "+#\u{0}".contains($0) }) {
                        throw refuse("the \(name) '\(ValueRange.printable(part))' holds +, # or NUL, which MQTT topics cannot")
                    }
                    // Decoded from %XX: what MQTT says a topic should not hold (control characters, noncharacters).
                    if part.unicodeScalars.contains(where: Self.isUnfitForTopics) {
                        throw refuse("the \(name) '\(ValueRange.printable(part))' holds a control character or a noncharacter, which MQTT topics should not")
                    }
                    if part.utf8.count > Self.longestPart {
                        throw refuse("the \(name) is longer than \(Self.longestPart) bytes")
                    }
                }
                self.user = String(user)
                self.device = String(device)
            case .homeassistant:
                if maxAge != nil { throw refuse("max-age bounds an outbox; a Home Assistant uplink keeps none (it sends the latest fix only)") }
                guard parts.count == 1, let device = parts.first, !device.isEmpty else {
                    throw refuse("the path must be /DEVICE (the device tracker's id in Home Assistant)")
                }
                guard device.utf8.count <= Self.longestPart,
                    device.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") })
                else {
                    throw refuse("the device '\(ValueRange.printable(device))' must be letters, digits, _ and - (at most \(Self.longestPart)): Home Assistant makes ids of it")
                }
                self.device = String(device)
            }
        }
        // OwnTracks' default: the device's last two characters (here letters and digits, as a tid given is).
        if !seen.contains("tid") {
            let letters = device.filter { $0.isASCII && ($0.isLetter || $0.isNumber) }
            trackerID = letters.count >= 2 ? String(letters.suffix(2)) : "ld"
        }
        if let username, username.unicodeScalars.contains(where: Self.isUnfitForTopics) {
            throw refuse("the user name holds a control character or a noncharacter")
        }
        if caFile != nil, !usesTLS { throw refuse("ca-file is for mqtts:// and https://; \(scheme):// does not use TLS") }
        if passwordFile != nil, username == nil { throw refuse("password-file needs a user name: \(scheme)://USER@HOST/…") }
    }

    /// Whether `written` (as in the URL) names a host: a name of labels (letters, digits, `-` and `_`, none
    /// empty, none starting or ending with `-`; a trailing dot allowed), an IPv4 address (four numbers up to
    /// 255), or an IPv6 address in brackets, with a zone after `%25` if any.
    static func isHost(_ written: Substring) -> Bool {
        if written.hasPrefix("[") {
            guard written.hasSuffix("]"), written.count > 2 else { return false }
            let inside = written.dropFirst().dropLast()
            let zoneStart = inside.range(of: "%25")
            let address = inside[..<(zoneStart?.lowerBound ?? inside.endIndex)]
            let zone = zoneStart.map { inside[$0.upperBound...] } ?? ""
            guard address.contains(":"), address.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return false }
            guard zoneStart == nil || (!zone.isEmpty && zone.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-._".contains($0)) }) else {
                return false
            }
            // An address has at most 8 groups and one "::".
            return address.split(separator: ":", omittingEmptySubsequences: false).count <= 9 && address.components(separatedBy: "::").count <= 2
        }
        let name = written.hasSuffix(".") ? written.dropLast() : written
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        guard !name.isEmpty, labels.allSatisfy({ label in
            !label.isEmpty && label.count <= 63 && !label.hasPrefix("-") && !label.hasSuffix("-")
                && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
        }) else { return false }
        // All digits: an IPv4 address, whose four numbers must fit a byte.
        if labels.allSatisfy({ $0.allSatisfy(\.isNumber) }) {
            return labels.count == 4 && labels.allSatisfy { Int($0).map { $0 <= 255 } ?? false }
        }
        return true
    }

    /// The URL with any password in it replaced by `***`, for messages.
    static func redacted(_ text: String) -> String {
        guard let schemeEnd = text.range(of: "://") else { return text }
        let rest = text[schemeEnd.upperBound...]
        // The last @ anywhere: a password may hold /, ? or # (the URL is refused then, and its message must
        // not show it). An @ in a query value hides more of the message than needed, never less.
        guard let at = rest.lastIndex(of: "@") else { return text }
        // A colon, written or as %3A, starts a password.
        let userinfo = rest[..<at]
        let colon = [userinfo.firstIndex(of: ":"), userinfo.range(of: "%3a", options: .caseInsensitive)?.lowerBound].compactMap { $0 }.min()
        guard let colon else { return text }
        return String(text[..<colon]) + ":***" + String(text[at...])
    }

    /// A control character (C0, DEL, C1) or a Unicode noncharacter.
    static func isUnfitForTopics(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        return value < 0x20 || (0x7F...0x9F).contains(value) || (0xFDD0...0xFDEF).contains(value) || value & 0xFFFE == 0xFFFE
    }

    private static func whole(_ text: String, _ range: ValueRange, _ place: String) throws(LocationError) -> Double {
        let value = try range.value(parsing: text, for: place)
        guard value == value.rounded() else {
            throw LocationError(.invalidConfiguration, "\(place): \(ValueRange.printable(text)) is not a whole number; use \(range)")
        }
        return value
    }

    /// Checks the files the uplink reads (the password file and the CA file) as its start would: run before
    /// anything starts, and by `--check-config`. Returns the password, if there is one.
    ///
    /// - Throws: ``LocationError/Code/invalidConfiguration`` naming the file and what is wrong with it.
    @discardableResult
    package func checkFiles() throws(LocationError) -> String? {
        let password = try readPassword()
        guard let path = caFile else { return password }
        func refuse(_ reason: String) -> LocationError {
            LocationError(.invalidConfiguration, "the CA file \(ValueRange.printable(path, limit: 200)) of uplink \(name) \(reason)")
        }
        // A FIFO or a device would hang the TLS library's read for ever: only a regular file is handed to it.
        let fd = try Self.openRegularFile(path, refuse)
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw refuse("cannot be inspected: \(String(cString: strerror(errno)))") }
        guard info.st_size > 0 else { throw refuse("is empty; it should hold the PEM certificate(s) of the authority that signed the server's") }
        guard info.st_size <= 16 << 20 else { throw refuse("is larger than 16 MiB; it should hold PEM certificates") }
        // The first 64 KiB: `openssl x509 -text` writes several KiB of text before the PEM block.
        var head = [UInt8](repeating: 0, count: 65_536)
        guard case .success(let count) = SystemIO.read(fd, into: &head, upTo: head.count) else {
            throw refuse("cannot be read: \(String(cString: strerror(errno)))")
        }
        let text = String(decoding: head.prefix(count), as: UTF8.self)
        guard text.contains("-----BEGIN CERTIFICATE-----") || text.contains("-----BEGIN TRUSTED CERTIFICATE-----") else {
            throw refuse("holds no PEM certificate (no -----BEGIN CERTIFICATE----- line); convert a DER file with openssl x509 -inform der")
        }
        guard !text.contains("PRIVATE KEY-----") else {
            throw refuse("holds a private key; give the certificate of the authority that signed the server's, and keep the key elsewhere")
        }
        return password
    }

    /// Why the CA file at `path` cannot be handed to the TLS library now, or nil: checked again before every
    /// connection and request, since the file may have been replaced since the start (a FIFO there would
    /// hang the library's read, and with it the uplink's thread and locationd's stop).
    package static func caFileProblem(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard fd >= 0 else { return "the CA file \(ValueRange.printable(path, limit: 200)) cannot be opened: \(String(cString: strerror(errno)))" }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            return "the CA file \(ValueRange.printable(path, limit: 200)) is no longer a regular file"
        }
        guard info.st_size > 0 else { return "the CA file \(ValueRange.printable(path, limit: 200)) is empty" }
        return nil
    }

    /// Opens `path` for reading without waiting on it, and returns it only if it is a regular file.
    private static func openRegularFile(_ path: String, _ refuse: (String) -> LocationError) throws(LocationError) -> Int32 {
        // O_NONBLOCK: a FIFO is refused below rather than waited on for ever.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard fd >= 0 else { throw refuse("cannot be opened: \(String(cString: strerror(errno)))") }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw refuse("cannot be inspected: \(reason)")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw refuse("is not a regular file")
        }
        return fd
    }

    /// Reads the password: the first line of `passwordFile`, a regular file no other user may read.
    ///
    /// - Throws: ``LocationError/Code/invalidConfiguration`` naming the file and what is wrong with it (never its contents).
    package func readPassword() throws(LocationError) -> String? {
        guard let path = passwordFile else { return nil }
        func refuse(_ reason: String) -> LocationError {
            LocationError(.invalidConfiguration, "the password file \(ValueRange.printable(path, limit: 200)) of uplink \(name) \(reason)")
        }
        let fd = try Self.openRegularFile(path, refuse)
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw refuse("cannot be inspected: \(String(cString: strerror(errno)))") }
        guard info.st_mode & 0o077 == 0 else {
            throw refuse("may be read by other users (mode \(String(info.st_mode & 0o777, radix: 8))); chmod 600 \(ValueRange.printable(path, limit: 200))")
        }
        guard info.st_uid == geteuid() else {
            throw refuse("belongs to uid \(info.st_uid), not to locationd's user (uid \(geteuid())); chown it to that user")
        }
        // A file that says it is empty is (a /proc file says so too, and holds something else).
        guard info.st_size > 0 else { throw refuse("has no password on its first line") }
        guard info.st_size <= 4096 else { throw refuse("is larger than 4096 bytes; it should hold one line") }
        var bytes = [UInt8](repeating: 0, count: 4096)
        switch SystemIO.read(fd, into: &bytes, upTo: 4096) {
        case .success(let count): bytes.removeSubrange(count...)
        case .failure(let failure): throw refuse("cannot be read: \(failure)")
        }
        let line = bytes.split(separator: 0x0A, maxSplits: 1, omittingEmptySubsequences: false).first ?? []
        let trimmed = line.last == 0x0D ? line.dropLast() : line[...]
        guard !trimmed.contains(0) else { throw refuse("holds a NUL byte, which a password cannot") }
        guard let password = String(validating: Array(trimmed), as: UTF8.self), !password.isEmpty else {
            throw refuse("has no password on its first line (or it is not UTF-8)")
        }
        return password
    }
}
