import Configuration
import Foundation
import LocationCore
import LocationGPSD
import SystemPackage

/// Everything `locationd` and `locationctl` can be configured with, from defaults, a YAML file,
/// environment variables and flags (in rising priority).
///
/// The YAML keys are documented in `Config/locationd.yaml`. Every key can also be set in the environment
/// as `LOCATIOND_` followed by the key in capitals with `_` for `.` and camel-case breaks, such as
/// `LOCATIOND_GPSD_HOST` or `LOCATIOND_REDUCED_INTERVAL`.
public struct ServiceConfiguration: Sendable, Hashable {
    /// gpsd's host. Key `gpsd.host`, default `localhost`.
    public var gpsdHost = "localhost"
    /// gpsd's port. Key `gpsd.port`, default 2947.
    public var gpsdPort = 2947
    /// Watch only this device. Key `gpsd.device`, default all devices.
    public var gpsdDevice: String?
    /// Seconds before the first reconnection after gpsd went away; the delay doubles on each failed
    /// attempt. Key `gpsd.reconnectDelay`, default 0.25.
    public var gpsdReconnectDelay = 0.25
    /// The longest delay between reconnection attempts, seconds. Key `gpsd.maxReconnectDelay`, default 5.
    public var gpsdMaxReconnectDelay = 5.0
    /// Seconds without any message from gpsd before the connection counts as stalled and is reopened.
    /// Key `gpsd.watchdog`, default 5.
    public var gpsdWatchdog = 5.0
    /// The control socket. Key `socket`, default `$XDG_RUNTIME_DIR/locationd/control.sock`, else
    /// `/run/locationd/control.sock`.
    public var socketPath: String = ServiceConfiguration.defaultSocketPath()
    /// Where held fixes are journaled. Key `journal`, default none.
    public var journalPath: String?
    /// Metres between foreground deliveries. Key `distanceFilter`, default none.
    public var distanceFilter: Double?
    /// Seconds between background acquisitions. Key `reduced.interval`, default 60.
    public var reducedInterval = 60.0
    /// Metres that end a background acquisition. Key `reduced.accuracy`, default 100.
    public var reducedAccuracy: Double? = 100
    /// Longest background acquisition, seconds. Key `reduced.acquisitionTimeout`, default 30.
    public var reducedAcquisitionTimeout = 30.0
    /// Metres between background deliveries. Key `reduced.distance`, default none.
    public var reducedDistance: Double?
    /// Background coordinates snapped to a grid of this many metres. Key `reduced.coarseningGrid`, default none.
    public var reducedCoarseningGrid: Double?
    /// Whether a background app keeps live reduced updates. Key `backgroundLocation`, default `true`.
    public var backgroundLocation = true
    /// The most fixes held while suspended. Key `batch.capacity`, default 100,000.
    public var batchCapacity = 100_000
    /// Seconds before a background app with nothing to do is suspended. Key `lifecycle.gracePeriod`, default 5.
    public var gracePeriod = 5.0
    /// Seconds background tasks may run. Key `lifecycle.taskTimeLimit`, default 180.
    public var taskTimeLimit = 180.0
    /// Seconds a control client with replies or events pending may go without reading any of them before
    /// the daemon drops it. Key `control.stallTimeout`, default 30.
    public var controlStallTimeout = 30.0

    /// The defaults.
    public init() {}

    /// The default control socket path.
    public static func defaultSocketPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            return runtime + "/locationd/control.sock"
        }
        return "/run/locationd/control.sock"
    }

    /// Reads the defaults, then the YAML file at `path` (if given), then `LOCATIOND_*` environment variables.
    ///
    /// - Throws: ``LocationError/Code/invalidConfiguration`` naming the file and the problem when the file
    ///   is missing, is not valid YAML, or holds a value of the wrong kind.
    public static func load(
        path: String?, environment: [String: String] = ProcessInfo.processInfo.environment
    ) async throws(LocationError) -> ServiceConfiguration {
        var providers: [any ConfigProvider] = [
            EnvironmentVariablesProvider(environmentVariables: environment).prefixKeys(with: "locationd")
        ]
        if let path {
            guard FileManager.default.fileExists(atPath: path) else {
                throw LocationError(.invalidConfiguration, "configuration file \(path) does not exist")
            }
            do {
                providers.append(try await FileProvider<YAMLSnapshot>(filePath: FilePath(path)))
            } catch {
                throw LocationError(.invalidConfiguration, "configuration file \(path) is not valid YAML: \(error)")
            }
        }
        let reader = ConfigReader(providers: providers)
        let origin = path.map { "configuration file \($0) or LOCATIOND_* environment" } ?? "LOCATIOND_* environment"
        var result = ServiceConfiguration()
        var problems: [String] = []

        func text(_ key: String) -> String? { reader.string(forKey: ConfigKey(stringLiteral: key)) }
        func number(_ key: String) -> Double? {
            let configKey = ConfigKey(stringLiteral: key)
            if let value = reader.double(forKey: configKey) { return value }
            if let value = reader.int(forKey: configKey) { return Double(value) }
            if let raw = text(key) {
                if let value = Double(raw.trimmingCharacters(in: .whitespaces)) { return value }
                problems.append("\(key): '\(raw)' is not a number")
            }
            return nil
        }
        func flag(_ key: String) -> Bool? {
            let configKey = ConfigKey(stringLiteral: key)
            if let value = reader.bool(forKey: configKey) { return value }
            if let raw = text(key) {
                switch raw.lowercased() {
                case "on", "true", "yes", "1": return true
                case "off", "false", "no", "0": return false
                default: problems.append("\(key): '\(raw)' is not on or off")
                }
            }
            return nil
        }

        if let value = text("gpsd.host") { result.gpsdHost = value }
        if let value = number("gpsd.port") { result.gpsdPort = Int(exactly: value) ?? -1 }
        if let value = text("gpsd.device") { result.gpsdDevice = value }
        if let value = number("gpsd.reconnectDelay") { result.gpsdReconnectDelay = value }
        if let value = number("gpsd.maxReconnectDelay") { result.gpsdMaxReconnectDelay = value }
        if let value = number("gpsd.watchdog") { result.gpsdWatchdog = value }
        if let value = text("socket") { result.socketPath = value }
        if let value = text("journal") { result.journalPath = value }
        if let value = number("distanceFilter") { result.distanceFilter = value }
        if let value = number("reduced.interval") { result.reducedInterval = value }
        if let value = number("reduced.accuracy") { result.reducedAccuracy = value }
        if let value = number("reduced.acquisitionTimeout") { result.reducedAcquisitionTimeout = value }
        if let value = number("reduced.distance") { result.reducedDistance = value }
        if let value = number("reduced.coarseningGrid") { result.reducedCoarseningGrid = value }
        if let value = flag("backgroundLocation") { result.backgroundLocation = value }
        if let value = number("batch.capacity") { result.batchCapacity = Int(exactly: value) ?? -1 }
        if let value = number("lifecycle.gracePeriod") { result.gracePeriod = value }
        if let value = number("lifecycle.taskTimeLimit") { result.taskTimeLimit = value }
        if let value = number("control.stallTimeout") { result.controlStallTimeout = value }
        if let problem = problems.first {
            throw LocationError(.invalidConfiguration, "\(origin): \(problem)")
        }
        return result
    }

    /// Checks every value; throws ``LocationError/Code/invalidConfiguration`` naming the first bad one.
    public func validate() throws(LocationError) {
        func bad(_ message: String) -> LocationError { LocationError(.invalidConfiguration, message) }
        func positive(_ value: Double?, _ name: String) throws(LocationError) {
            if let value, !(value.isFinite && value > 0) { throw bad("\(name) must be a positive number, got \(value)") }
        }
        if gpsdHost.isEmpty { throw bad("gpsd host is empty") }
        if !(1...65_535).contains(gpsdPort) { throw bad("gpsd port must be a whole number in 1...65535, got \(gpsdPort)") }
        try positive(gpsdReconnectDelay, "gpsd reconnect delay")
        try positive(gpsdMaxReconnectDelay, "gpsd maximum reconnect delay")
        if gpsdMaxReconnectDelay < gpsdReconnectDelay {
            throw bad("gpsd maximum reconnect delay \(gpsdMaxReconnectDelay) s is below the reconnect delay \(gpsdReconnectDelay) s")
        }
        try positive(gpsdWatchdog, "gpsd watchdog")
        try positive(reducedInterval, "reduced interval")
        try positive(reducedAccuracy, "reduced accuracy")
        try positive(reducedAcquisitionTimeout, "reduced acquisition timeout")
        try positive(reducedDistance, "reduced distance")
        try positive(reducedCoarseningGrid, "reduced coarsening grid")
        try positive(distanceFilter, "distance filter")
        try positive(gracePeriod, "grace period")
        try positive(taskTimeLimit, "task time limit")
        try positive(controlStallTimeout, "control stall timeout")
        if batchCapacity < 1 { throw bad("batch capacity must be a whole number of at least 1, got \(batchCapacity)") }
        if socketPath.utf8.count > 107 { throw bad("socket path is longer than 107 bytes: \(socketPath)") }
    }

    /// The gpsd source configuration these values describe.
    public var gpsdConfiguration: GPSDConfiguration {
        GPSDConfiguration(
            host: gpsdHost, port: gpsdPort, devicePath: gpsdDevice,
            reconnectDelay: .seconds(gpsdReconnectDelay), maximumReconnectDelay: .seconds(gpsdMaxReconnectDelay),
            watchdogTimeout: .seconds(gpsdWatchdog))
    }

    /// The manager configuration these values describe.
    public var managerConfiguration: LocationManagerConfiguration {
        LocationManagerConfiguration(
            distanceFilter: distanceFilter,
            allowsBackgroundLocationUpdates: backgroundLocation,
            reduced: ReducedAccuracyPolicy(
                interval: .seconds(reducedInterval), desiredAccuracy: reducedAccuracy,
                acquisitionTimeout: .seconds(reducedAcquisitionTimeout), distanceFilter: reducedDistance,
                coarseningGrid: reducedCoarseningGrid),
            batchCapacity: batchCapacity,
            journalPath: journalPath)
    }

    /// The lifecycle configuration these values describe.
    public var applicationConfiguration: ApplicationConfiguration {
        ApplicationConfiguration(
            backgroundGracePeriod: .seconds(gracePeriod), backgroundTaskTimeLimit: .seconds(taskTimeLimit))
    }
}
