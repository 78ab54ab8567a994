import LocationCore

/// One key of ``ServiceConfiguration``: its YAML name, its environment variable, the kind of value it takes
/// and where that value goes.
///
/// ``ServiceConfiguration/keys`` lists every key; loading, the documentation check and the boundary tests
/// all read that list, so a new key is covered everywhere once it is declared there.
package struct ConfigurationKey: Sendable {
    /// The kind of value a key takes.
    package enum Kind: Sendable, Hashable {
        /// Any non-empty text, such as a host or a path.
        case text
        /// A number within a range (a duration in seconds, a distance in metres).
        case number(ValueRange)
        /// A whole number within a range.
        case integer(ValueRange)
        /// `on`/`off` (also `true`/`false`, `yes`/`no`, `1`/`0`).
        case onOff
        /// One of these words.
        case choice([String])
    }

    /// The dotted YAML name, such as `reduced.interval`.
    package let name: String
    /// The kind of value.
    package let kind: Kind
    private let store: @Sendable (inout ServiceConfiguration, Value) -> Void

    /// A checked value of a key.
    enum Value {
        case text(String)
        case number(Double)
        case flag(Bool)
    }

    init(_ name: String, _ kind: Kind, _ store: @escaping @Sendable (inout ServiceConfiguration, Value) -> Void) {
        self.name = name
        self.kind = kind
        self.store = store
    }

    /// The environment variable that sets this key: `LOCATIOND_` and the name in capitals, with `_` for `.`
    /// and at each camel-case break (`reduced.acquisitionTimeout` is `LOCATIOND_REDUCED_ACQUISITION_TIMEOUT`).
    package var environmentVariable: String {
        var result = "LOCATIOND_"
        var previousWasLower = false
        for character in name {
            if character == "." {
                result.append("_")
                previousWasLower = false
                continue
            }
            if character.isUppercase, previousWasLower { result.append("_") }
            result += character.uppercased()
            previousWasLower = character.isLowercase || character.isNumber
        }
        return result
    }

    /// Checks `raw` (the value as written) and stores it in `configuration`.
    ///
    /// - Parameter place: Where the value came from, for the message: the variable or `FILE: key`.
    /// - Throws: ``LocationError/Code/invalidConfiguration`` naming the place, the value as written and what
    ///   is expected.
    func apply(_ raw: String, _ place: String, _ configuration: inout ServiceConfiguration) throws(LocationError) {
        switch kind {
        case .text:
            guard !raw.isEmpty else { throw LocationError(.invalidConfiguration, "\(place): the value is empty") }
            store(&configuration, .text(raw))
        case .number(let range):
            store(&configuration, .number(try range.value(parsing: raw, for: place)))
        case .integer(let range):
            let value = try range.value(parsing: raw, for: place)
            guard value == value.rounded() else {
                throw LocationError(
                    .invalidConfiguration, "\(place): \(ValueRange.printable(raw)) is not a whole number; use \(range)")
            }
            store(&configuration, .number(value))
        case .onOff:
            switch raw.lowercased() {
            case "on", "true", "yes", "1": store(&configuration, .flag(true))
            case "off", "false", "no", "0": store(&configuration, .flag(false))
            default:
                throw LocationError(.invalidConfiguration, "\(place): '\(ValueRange.printable(raw))' is not on or off")
            }
        case .choice(let words):
            guard words.contains(raw) else {
                throw LocationError(
                    .invalidConfiguration,
                    "\(place): '\(ValueRange.printable(raw))' is not \(words.dropLast().joined(separator: ", ")) or \(words.last ?? "")")
            }
            store(&configuration, .text(raw))
        }
    }
}

extension ServiceConfiguration {
    /// Every configuration key, in the order `Config/locationd.yaml` documents them.
    package static let keys: [ConfigurationKey] = [
        ConfigurationKey("gpsd.host", .text) { if case .text(let v) = $1 { $0.gpsdHost = v } },
        ConfigurationKey("gpsd.port", .integer(.port)) { if case .number(let v) = $1 { $0.gpsdPort = Int(v) } },
        ConfigurationKey("gpsd.device", .text) { if case .text(let v) = $1 { $0.gpsdDevice = v } },
        ConfigurationKey("gpsd.reconnectDelay", .number(.reconnectDelay)) {
            if case .number(let v) = $1 { $0.gpsdReconnectDelay = v }
        },
        ConfigurationKey("gpsd.maxReconnectDelay", .number(.reconnectDelay)) {
            if case .number(let v) = $1 { $0.gpsdMaxReconnectDelay = v }
        },
        ConfigurationKey("gpsd.watchdog", .number(.watchdog)) { if case .number(let v) = $1 { $0.gpsdWatchdog = v } },
        ConfigurationKey("gpsd.epochSettle", .number(.epochSettle)) { if case .number(let v) = $1 { $0.gpsdEpochSettle = v } },
        ConfigurationKey("socket", .text) { if case .text(let v) = $1 { $0.socketPath = v } },
        ConfigurationKey("journal", .text) { if case .text(let v) = $1 { $0.journalPath = v } },
        ConfigurationKey("distanceFilter", .number(.distance)) { if case .number(let v) = $1 { $0.distanceFilter = v } },
        ConfigurationKey("maxSpeed", .number(.speed)) { if case .number(let v) = $1 { $0.maxSpeed = v } },
        ConfigurationKey("motion", .onOff) { if case .flag(let v) = $1 { $0.motion = v } },
        ConfigurationKey("pausesWhenStationary", .onOff) { if case .flag(let v) = $1 { $0.pausesWhenStationary = v } },
        ConfigurationKey("whileStationary", .choice(StationaryDelivery.allCases.map(\.rawValue))) { if case .text(let v) = $1 { $0.whileStationary = v } },
        ConfigurationKey("maxUpdateDelay", .number(.backgroundInterval)) { if case .number(let v) = $1 { $0.maxUpdateDelay = v } },
        ConfigurationKey("reduced.interval", .number(.backgroundInterval)) {
            if case .number(let v) = $1 { $0.reducedInterval = v }
        },
        ConfigurationKey("reduced.accuracy", .number(.distance)) { if case .number(let v) = $1 { $0.reducedAccuracy = v } },
        ConfigurationKey("reduced.acquisitionTimeout", .number(.acquisitionTimeout)) {
            if case .number(let v) = $1 { $0.reducedAcquisitionTimeout = v }
        },
        ConfigurationKey("reduced.distance", .number(.distance)) { if case .number(let v) = $1 { $0.reducedDistance = v } },
        ConfigurationKey("reduced.coarseningGrid", .number(.distance)) {
            if case .number(let v) = $1 { $0.reducedCoarseningGrid = v }
        },
        ConfigurationKey("backgroundLocation", .onOff) { if case .flag(let v) = $1 { $0.backgroundLocation = v } },
        ConfigurationKey("batch.capacity", .integer(.batchCapacity)) {
            if case .number(let v) = $1 { $0.batchCapacity = Int(v) }
        },
        ConfigurationKey("lifecycle.didEnterBackgroundBudget", .number(.lifecycleTime)) {
            if case .number(let v) = $1 { $0.didEnterBackgroundBudget = v }
        },
        ConfigurationKey("lifecycle.taskTimeLimit", .number(.lifecycleTime)) {
            if case .number(let v) = $1 { $0.taskTimeLimit = v }
        },
        ConfigurationKey("control.stallTimeout", .number(.stallTimeout)) {
            if case .number(let v) = $1 { $0.controlStallTimeout = v }
        },
        ConfigurationKey("control.maxBufferedOutput", .integer(.bufferedOutput)) {
            if case .number(let v) = $1 { $0.controlMaxBufferedOutput = Int(v) }
        },
        ConfigurationKey("control.group", .text) { if case .text(let v) = $1 { $0.controlGroup = v } },
        ConfigurationKey("nmea.socket", .text) { if case .text(let v) = $1 { $0.nmeaSocketPath = v } },
        ConfigurationKey("nmea.group", .text) { if case .text(let v) = $1 { $0.nmeaGroup = v } },
        ConfigurationKey("apps.max", .integer(.appCount)) { if case .number(let v) = $1 { $0.maxApps = Int(v) } },
        ConfigurationKey("apps.maxPerUser", .integer(.appCount)) {
            if case .number(let v) = $1 { $0.maxAppsPerUser = Int(v) }
        },
        ConfigurationKey("apps.keepAbandoned", .number(.abandonedRetention)) {
            if case .number(let v) = $1 { $0.keepAbandoned = v }
        },
    ]
}
