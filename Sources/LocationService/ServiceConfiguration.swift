import Configuration
import Foundation
import LocationControl
import LocationCore
import LocationGPSD
import SystemPackage

/// Everything `locationd` and `locationctl` can be configured with, from defaults, a YAML file,
/// environment variables and flags (in rising priority).
///
/// The YAML keys are documented in `Config/locationd.yaml`. Every key can also be set in the environment
/// as `LOCATIOND_` followed by the key in capitals with `_` for `.` and camel-case breaks, such as
/// `LOCATIOND_GPSD_HOST` or `LOCATIOND_REDUCED_INTERVAL`.
package struct ServiceConfiguration: Sendable, Hashable {
    /// gpsd's host. Key `gpsd.host`, default `localhost`.
    package var gpsdHost = "localhost"
    /// gpsd's port. Key `gpsd.port`, default 2947.
    package var gpsdPort = 2947
    /// Watch only this device. Key `gpsd.device`, default all devices.
    package var gpsdDevice: String?
    /// Seconds before the first reconnection after gpsd went away; the delay doubles on each failed
    /// attempt. Key `gpsd.reconnectDelay`, default 0.25.
    package var gpsdReconnectDelay = 0.25
    /// The longest delay between reconnection attempts, seconds. Key `gpsd.maxReconnectDelay`, default 5.
    package var gpsdMaxReconnectDelay = 5.0
    /// Seconds without any message from gpsd before the connection counts as stalled and is reopened.
    /// Key `gpsd.watchdog`, default 5.
    package var gpsdWatchdog = 5.0
    /// Seconds an epoch is held for more of its reports while the receiver's pattern is not known yet (once
    /// it is, an epoch is delivered on its last report). Key `gpsd.epochSettle`, default 0.5.
    package var gpsdEpochSettle = 0.5
    /// The control socket. Key `socket`, default `$XDG_RUNTIME_DIR/locationd/control.sock`, else
    /// `/run/locationd/control.sock`.
    package var socketPath: String {
        get { configuredSocketPath ?? defaultSocketPath }
        set { configuredSocketPath = newValue }
    }
    /// The control socket named by the file, the environment or a flag; `nil` when none did, so that a
    /// client knows it may look in more than one place.
    package var configuredSocketPath: String?
    /// The default socket, taken when the defaults are made (from `XDG_RUNTIME_DIR`).
    private var defaultSocketPath = ServiceConfiguration.defaultSocketPath()
    /// The group whose members may use the control socket (a name or a number), which then is mode 0660;
    /// `nil` keeps it owner-only (0600). Key `control.group`, default none.
    package var controlGroup: String?
    /// A Unix socket that streams every fix as NMEA sentences to whoever connects (GeoClue's `nmea-socket`
    /// source, NMEA tools). Key `nmea.socket`, default none.
    package var nmeaSocketPath: String?
    /// The group whose members may read the NMEA socket (GeoClue's user's group), which then is mode 0660;
    /// `nil` keeps it owner-only (0600). Key `nmea.group`, default none.
    package var nmeaGroup: String?
    /// Where held fixes are journaled. Key `journal`, default none.
    package var journalPath: String?
    /// Where the fixes go beyond the device: one URL per uplink, each with its own policy and outbox. Key
    /// `uplinks` (a list), or `--uplink` (repeatable, replacing the list). Default none.
    package var uplinks: [String] = []
    /// Where ``uplinks`` came from, for messages: `--uplink`, or `FILE: uplinks`.
    package var uplinksPlace = "--uplink"
    /// The YAML key of the uplinks' list (not a ``ConfigurationKey``: its value is a list).
    package static let uplinksKey = "uplinks"
    /// `regions` (a list of `NAME=LAT,LON,RADIUS[,DWELL]`), or `--region` (repeatable, replacing the list):
    /// the regions of the shared app `default`. Default none.
    package var regionTexts: [String] = []
    /// Where ``regionTexts`` came from, for messages: `--region`, or `FILE: regions`.
    package var regionsPlace = "--region"
    /// The YAML key of the regions' list.
    package static let regionsKey = "regions"

    /// ``regionTexts`` as regions; checked at start (``checkRegions()``), so none is left out here.
    package var regions: [CircularRegion] { regionTexts.compactMap { try? RegionOptions.parse($0) } }

    /// Checks every region: a usage failure (64) naming its place and what is wrong.
    package func checkRegions() throws(CommandFailure) {
        var seen: Set<String> = []
        for (index, text) in regionTexts.enumerated() {
            let region: CircularRegion
            region = try RegionOptions.parse(text, place: "\(regionsPlace) \(index + 1)")
            guard seen.insert(region.identifier).inserted else {
                throw .usage("\(regionsPlace) \(index + 1): the name \(region.identifier) is given twice")
            }
        }
    }
    /// Metres between foreground deliveries. Key `distanceFilter`, default none.
    package var distanceFilter: Double?
    /// The outlier gate's fastest plausible movement, m/s. Key `maxSpeed`, default none (every fix passes).
    package var maxSpeed: Double?
    /// Stationary detection. Key `motion`, default off.
    package var motion = false
    /// The receiver rests while still (a check every 30 s); implies ``motion``. Key `pausesWhenStationary`,
    /// default off.
    package var pausesWhenStationary = false
    /// What is delivered while still: `centroid` or `nothing`. Key `whileStationary`, default `centroid`.
    package var whileStationary = StationaryDelivery.centroid.rawValue
    /// Deferred delivery: seconds a live fix may wait to be delivered with the next. Key `maxUpdateDelay`,
    /// default none.
    package var maxUpdateDelay: Double?
    /// Seconds between background acquisitions. Key `reduced.interval`, default 60.
    package var reducedInterval = 60.0
    /// Metres that end a background acquisition. Key `reduced.accuracy`, default 100.
    package var reducedAccuracy: Double? = 100
    /// Longest background acquisition, seconds. Key `reduced.acquisitionTimeout`, default 30.
    package var reducedAcquisitionTimeout = 30.0
    /// Metres between background deliveries. Key `reduced.distance`, default none.
    package var reducedDistance: Double?
    /// Background coordinates snapped to a grid of this many metres. Key `reduced.coarseningGrid`, default none.
    package var reducedCoarseningGrid: Double?
    /// The background location mode: whether a background (or suspended) app gets its reduced fixes live.
    /// Key `backgroundLocation`, default `false`, as in the library and on iOS.
    package var backgroundLocation = false
    /// The most fixes held while suspended. Key `batch.capacity`, default 100,000.
    package var batchCapacity = 100_000
    /// The most app sessions the daemon keeps, every user's together. Key `apps.max`, default 64.
    package var maxApps = 64
    /// The most app sessions one user may open (root is not counted against it). Key `apps.maxPerUser`,
    /// default 8: one user filling `apps.max` would lock every other out.
    package var maxAppsPerUser = 8
    /// Seconds an abandoned app's session (its own connection dropped while it tracked) is kept, holding
    /// its fixes, before it is dropped; also how long an app nobody uses (no connection has it open, none
    /// watches it) is kept. Key `apps.keepAbandoned`, default 7 days.
    package var keepAbandoned = 604_800.0
    /// Seconds the app's didEnterBackground handling may take before it is terminated, as on iOS.
    /// Key `lifecycle.didEnterBackgroundBudget`, default 5.
    package var didEnterBackgroundBudget = 5.0
    /// Seconds background tasks may run. Key `lifecycle.taskTimeLimit`, default 180.
    package var taskTimeLimit = 180.0
    /// Seconds a control client with replies or events pending may go without reading any of them before
    /// the daemon drops it. Key `control.stallTimeout`, default 30.
    package var controlStallTimeout = 30.0
    /// The most bytes of output the daemon holds for all its clients together; beyond it slow watchers miss
    /// events (counted and reported to them). Key `control.maxBufferedOutput`, default 64 MiB.
    package var controlMaxBufferedOutput = 64 * 1024 * 1024

    /// The defaults.
    package init() {}

    /// The defaults, with the default socket taken from `environment` (its `XDG_RUNTIME_DIR`).
    package init(environment: [String: String]) {
        defaultSocketPath = Self.defaultSocketPath(environment: environment)
    }

    /// The default control socket path.
    package static func defaultSocketPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        ControlSocketPath.user(environment: environment) ?? ControlSocketPath.system
    }

    /// Reads the defaults, then the YAML file at `path` (if given), then `LOCATIOND_*` environment variables.
    ///
    /// - Throws: ``LocationError/Code/invalidConfiguration`` naming the file and the problem when the file
    ///   is missing, is not valid YAML, or holds a value of the wrong kind.
    package static func load(
        path: String?, environment: [String: String] = ProcessInfo.processInfo.environment
    ) async throws(LocationError) -> ServiceConfiguration {
        try checkEnvironment(environment)
        var providers: [any ConfigProvider] = [
            EnvironmentVariablesProvider(environmentVariables: environment).prefixKeys(with: "locationd")
        ]
        if let path {
            let text = try readConfigurationFile(path)
            guard try ConfigurationFileCheck.check(yaml: text, path: path) else {
                return try load(reader: ConfigReader(providers: providers), path: path, environment: environment)
            }
            do {
                providers.append(try await FileProvider<YAMLSnapshot>(filePath: FilePath(path)))
            } catch {
                // The YAML parser's report spans several lines (the line quoted, a caret): one line here.
                let report = "\(error)".split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
                    .filter { !$0.isEmpty && $0 != "^" }.joined(separator: " ")
                throw LocationError(
                    .invalidConfiguration, "configuration file \(path) is not valid YAML: \(ValueRange.printable(report, limit: 300))")
            }
        }
        return try load(reader: ConfigReader(providers: providers), path: path, environment: environment)
    }

    /// Refuses a `LOCATIOND_*` variable that sets nothing, as an unknown key in the file is refused: a
    /// misspelt variable would otherwise leave its setting at the default without a word.
    private static func checkEnvironment(_ environment: [String: String]) throws(LocationError) {
        let known = Set(keys.map(\.environmentVariable))
        guard let unknown = environment.keys.filter({ $0.hasPrefix("LOCATIOND_") && !known.contains($0) }).sorted().first
        else { return }
        if unknown == "LOCATIOND_LIFECYCLE_GRACE_PERIOD" {
            throw LocationError(
                .invalidConfiguration,
                "\(unknown) is gone: a background app is no longer left running for a grace period; use LOCATIOND_LIFECYCLE_DID_ENTER_BACKGROUND_BUDGET")
        }
        let nearest = known.min { ConfigurationFileCheck.distance(unknown, $0) < ConfigurationFileCheck.distance(unknown, $1) } ?? ""
        throw LocationError(
            .invalidConfiguration, "unknown variable \(ValueRange.printable(unknown)); did you mean \(nearest)?")
    }

    /// The largest configuration file read: the documented file with every key is about 3 KiB.
    static let largestFile = 1 << 20

    /// Reads a configuration file that must be a regular file of at most ``largestFile`` bytes (a FIFO would
    /// block, a device never end).
    private static func readConfigurationFile(_ path: String) throws(LocationError) -> String {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw LocationError(.invalidConfiguration, "configuration file \(path): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw LocationError(.invalidConfiguration, "configuration file \(path) is not a regular file")
        }
        guard info.st_size <= largestFile else {
            throw LocationError(.invalidConfiguration, "configuration file \(path) is larger than \(largestFile) bytes")
        }
        // Read here rather than with FileManager, whose failed read (an unreadable file) leaks its buffer
        // (found by LeakSanitizer).
        func failure(_ number: Int32) -> LocationError {
            LocationError(.invalidConfiguration, "configuration file \(path) cannot be read: \(String(cString: strerror(number)))")
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { throw failure(errno) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while bytes.count <= largestFile {
            let count: Int
            switch chunk.withUnsafeMutableBytes({ SystemIO.read(fd, into: $0) }) {
            case .success(let read): count = read
            case .failure(let problem): throw failure(problem.errno)
            }
            if count == 0 { break }
            bytes += chunk[..<count]
        }
        guard bytes.count <= largestFile else {
            throw LocationError(.invalidConfiguration, "configuration file \(path) is larger than \(largestFile) bytes")
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Reads every key from `reader`.
    private static func load(
        reader: ConfigReader, path: String?, environment: [String: String]
    ) throws(LocationError) -> ServiceConfiguration {
        var result = ServiceConfiguration(environment: environment)
        for key in keys {
            guard let raw = reader.string(forKey: ConfigKey(stringLiteral: key.name)) ?? Self.nonTextValue(reader, key.name) else {
                continue
            }
            let place = environment[key.environmentVariable] != nil ? key.environmentVariable : path.map { "\($0): \(key.name)" } ?? key.name
            try key.apply(raw, place, &result)
        }
        if let path, let uplinks = reader.stringArray(forKey: ConfigKey(stringLiteral: uplinksKey)) {
            result.uplinks = uplinks
            result.uplinksPlace = "\(path): uplinks"
        }
        if let path, let regions = reader.stringArray(forKey: ConfigKey(stringLiteral: regionsKey)) {
            result.regionTexts = regions
            result.regionsPlace = "\(path): regions"
        }
        return result
    }

    /// A value the reader does not give as text (a YAML number or boolean), as text.
    private static func nonTextValue(_ reader: ConfigReader, _ name: String) -> String? {
        let key = ConfigKey(stringLiteral: name)
        if let value = reader.int(forKey: key) { return String(value) }
        if let value = reader.double(forKey: key) { return ValueRange.text(value) }
        if let value = reader.bool(forKey: key) { return value ? "true" : "false" }
        return nil
    }

    /// Checks every value; throws ``LocationError/Code/invalidConfiguration`` naming the first bad one.
    package func validate() throws(LocationError) {
        func bad(_ message: String) -> LocationError { LocationError(.invalidConfiguration, message) }
        func check(_ value: Double?, _ range: ValueRange, _ name: String) throws(LocationError) {
            if let value { _ = try range.value(value, for: name) }
        }
        if gpsdHost.isEmpty { throw bad("gpsd host is empty") }
        try check(Double(gpsdPort), .port, "gpsd port")
        try check(gpsdReconnectDelay, .reconnectDelay, "gpsd reconnect delay")
        try check(gpsdMaxReconnectDelay, .reconnectDelay, "gpsd maximum reconnect delay")
        if gpsdMaxReconnectDelay < gpsdReconnectDelay {
            throw bad("gpsd maximum reconnect delay \(gpsdMaxReconnectDelay) s is below the reconnect delay \(gpsdReconnectDelay) s")
        }
        try check(gpsdWatchdog, .watchdog, "gpsd watchdog")
        try check(gpsdEpochSettle, .epochSettle, "gpsd epoch settle")
        try check(reducedInterval, .backgroundInterval, "reduced interval")
        try check(reducedAccuracy, .distance, "reduced accuracy")
        try check(reducedAcquisitionTimeout, .acquisitionTimeout, "reduced acquisition timeout")
        try check(reducedDistance, .distance, "reduced distance")
        try check(reducedCoarseningGrid, .distance, "reduced coarsening grid")
        try check(distanceFilter, .distance, "distance filter")
        try check(maxSpeed, .speed, "maximum speed")
        try check(maxUpdateDelay, .backgroundInterval, "maximum update delay")
        if StationaryDelivery(rawValue: whileStationary) == nil {
            throw bad("while stationary '\(ValueRange.printable(whileStationary))' is neither centroid nor nothing")
        }
        try check(didEnterBackgroundBudget, .lifecycleTime, "didEnterBackground budget")
        try check(taskTimeLimit, .lifecycleTime, "task time limit")
        try check(controlStallTimeout, .stallTimeout, "control stall timeout")
        try check(Double(batchCapacity), .batchCapacity, "batch capacity")
        try check(Double(controlMaxBufferedOutput), .bufferedOutput, "control maximum buffered output")
        if socketPath.isEmpty { throw bad("socket path is empty") }
        if socketPath.utf8.count > 107 { throw bad("socket path is longer than 107 bytes: \(socketPath)") }
        if journalPath?.isEmpty == true { throw bad("journal path is empty") }
        if controlGroup?.isEmpty == true { throw bad("control group is empty") }
        if let nmeaSocketPath {
            if nmeaSocketPath.isEmpty { throw bad("NMEA socket path is empty") }
            if nmeaSocketPath.utf8.count > 107 { throw bad("NMEA socket path is longer than 107 bytes: \(nmeaSocketPath)") }
            // GeoClue and the others are given the path in their own configuration: it must not depend on
            // the directory locationd was started in.
            if !nmeaSocketPath.hasPrefix("/") { throw bad("NMEA socket path \(nmeaSocketPath) is relative; give an absolute path, such as /run/locationd/nmea/nmea.sock") }
            if FilePathText.sameFile(nmeaSocketPath, socketPath) {
                throw bad("the NMEA socket \(nmeaSocketPath) and the control socket \(socketPath) are the same file")
            }
        }
        if nmeaGroup?.isEmpty == true { throw bad("NMEA socket group is empty") }
        if nmeaGroup != nil, nmeaSocketPath == nil { throw bad("an NMEA socket group is given without an NMEA socket (--nmea-socket, nmea.socket)") }
    }

    /// The gpsd source configuration these values describe.
    package var gpsdConfiguration: GPSDConfiguration {
        GPSDConfiguration(
            host: gpsdHost, port: gpsdPort, devicePath: gpsdDevice,
            reconnectDelay: ValueRange.duration(clampingSeconds: gpsdReconnectDelay),
            maximumReconnectDelay: ValueRange.duration(clampingSeconds: gpsdMaxReconnectDelay),
            watchdogTimeout: ValueRange.duration(clampingSeconds: gpsdWatchdog),
            epochSettle: ValueRange.duration(clampingSeconds: gpsdEpochSettle))
    }

    /// The manager configuration these values describe.
    package var managerConfiguration: LocationManagerConfiguration {
        LocationManagerConfiguration(
            distanceFilter: distanceFilter,
            allowsBackgroundLocationUpdates: backgroundLocation,
            reduced: ReducedAccuracyPolicy(
                interval: ValueRange.duration(clampingSeconds: reducedInterval), desiredAccuracy: reducedAccuracy,
                acquisitionTimeout: ValueRange.duration(clampingSeconds: reducedAcquisitionTimeout),
                distanceFilter: reducedDistance,
                coarseningGrid: reducedCoarseningGrid),
            batchCapacity: batchCapacity,
            journalPath: journalPath,
            outlierGate: maxSpeed.map { OutlierGate(maximumSpeed: $0) },
            motion: motion || pausesWhenStationary ? MotionDetector.Configuration() : nil,
            whileStationary: StationaryDelivery(rawValue: whileStationary) ?? .centroid,
            pausesWhenStationary: pausesWhenStationary,
            maximumUpdateDelay: maxUpdateDelay.map { ValueRange.duration(clampingSeconds: $0) })
    }

    /// The lifecycle configuration these values describe.
    package var applicationConfiguration: ApplicationConfiguration {
        ApplicationConfiguration(
            didEnterBackgroundBudget: ValueRange.duration(clampingSeconds: didEnterBackgroundBudget),
            backgroundTaskTimeLimit: ValueRange.duration(clampingSeconds: taskTimeLimit))
    }
}
