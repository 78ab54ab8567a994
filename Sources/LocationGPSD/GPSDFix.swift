internal import CGPS
import LocationCore

/// The fields of one TPV report that a ``Location`` needs.
struct GPSDFix: Sendable, Equatable {
    /// 0 = not seen, 1 = no fix, 2 = 2D, 3 = 3D.
    var mode: Int
    /// The fix time; `nil` when the TPV carried none.
    var time: GPSDTime?
    var latitude: Double?
    var longitude: Double?
    var altitudeMSL: Double?
    var altitudeHAE: Double?
    /// Horizontal error estimate (m).
    var eph: Double?
    /// Longitude error estimate (m).
    var epx: Double?
    /// Latitude error estimate (m).
    var epy: Double?
    /// Vertical error estimate (m).
    var epv: Double?
    var speed: Double?
    /// Speed error estimate (m/s).
    var eps: Double?
    var track: Double?
    /// Track error estimate (degrees).
    var epd: Double?
    var climb: Double?
    /// The gpsd device path that produced the report, when gpsd named it.
    var device: String?
    /// gpsd's `status` as a correction status; `nil` when gpsd did not send one (it omits it on a plain fix).
    var correction: CorrectionStatus?

    init(
        mode: Int, time: GPSDTime? = nil, latitude: Double? = nil, longitude: Double? = nil,
        altitudeMSL: Double? = nil, altitudeHAE: Double? = nil, eph: Double? = nil, epx: Double? = nil,
        epy: Double? = nil, epv: Double? = nil, speed: Double? = nil, eps: Double? = nil,
        track: Double? = nil, epd: Double? = nil, climb: Double? = nil, device: String? = nil,
        correction: CorrectionStatus? = nil
    ) {
        self.mode = mode
        self.time = time
        self.latitude = latitude.finiteValue
        self.longitude = longitude.finiteValue
        self.altitudeMSL = altitudeMSL.finiteValue
        self.altitudeHAE = altitudeHAE.finiteValue
        self.eph = eph.finiteValue
        self.epx = epx.finiteValue
        self.epy = epy.finiteValue
        self.epv = epv.finiteValue
        self.speed = speed.finiteValue
        self.eps = eps.finiteValue
        self.track = track.finiteValue
        self.epd = epd.finiteValue
        self.climb = climb.finiteValue
        self.device = device
        self.correction = correction
    }

    /// Whether the receiver reports a position fix (2D or 3D).
    var hasFix: Bool { mode >= 2 }

    /// Overlays the values `newer` carries onto this one; values it lacks are kept.
    mutating func merge(_ newer: GPSDFix) {
        mode = newer.mode
        time = newer.time ?? time
        latitude = newer.latitude ?? latitude
        longitude = newer.longitude ?? longitude
        altitudeMSL = newer.altitudeMSL ?? altitudeMSL
        altitudeHAE = newer.altitudeHAE ?? altitudeHAE
        eph = newer.eph ?? eph
        epx = newer.epx ?? epx
        epy = newer.epy ?? epy
        epv = newer.epv ?? epv
        speed = newer.speed ?? speed
        eps = newer.eps ?? eps
        track = newer.track ?? track
        epd = newer.epd ?? epd
        climb = newer.climb ?? climb
        device = newer.device ?? device
        correction = newer.correction ?? correction
    }
}

extension GPSDFix {
    /// The outcome of checking a TPV's raw values.
    enum Checked: Equatable {
        /// The TPV cannot be a fix; the text says why ("latitude 91.0 (outside -90…90)").
        case refused(String)
        /// The fix, with every value outside its range left out (`nil`); `leftOut` names the first.
        case fix(GPSDFix, leftOut: String?)
    }

    /// Fix times before the GPS epoch (1980-01-06) or from 2200 on are impossible, and a single one far in
    /// the future would make every later real fix look stale.
    static let timeRange = GPSDTime(seconds: 315_964_800, nanoseconds: 0)..<GPSDTime(seconds: 7_258_118_400, nanoseconds: 0)
    // The value ranges are LocationValueCheck's: one set for every source.
    static let latitudeRange = LocationValueCheck.latitude
    static let longitudeRange = LocationValueCheck.longitude
    static let altitudeRange = LocationValueCheck.altitude
    static let distanceErrorRange = LocationValueCheck.distanceError
    static let speedRange = LocationValueCheck.speed
    static let climbRange = LocationValueCheck.climb
    static let angleRange = LocationValueCheck.angle

    /// Checks the values libgps decoded from one TPV (NaN meaning absent): an impossible mode, time or
    /// coordinate refuses the whole TPV; any other value outside its range is left out. A TPV without a
    /// coordinate passes; no fix is made from it. `status` is libgps's `fix.status` (0 when the TPV had none);
    /// `statusText` is gpsd's own text for a status that is not a whole number (libgps misreads those),
    /// which is left out like a number gpsd does not use.
    static func checked(
        mode: Int, time: GPSDTime?, latitude: Double, longitude: Double,
        altitudeMSL: Double, altitudeHAE: Double, eph: Double, epx: Double, epy: Double, epv: Double,
        speed: Double, eps: Double, track: Double, epd: Double, climb: Double, device: String?, status: Int? = 0,
        statusText: String? = nil
    ) -> Checked {
        guard (0...3).contains(mode) else { return .refused("mode \(mode) (gpsd uses 0 to 3)") }
        if let time, !timeRange.contains(time) {
            return .refused("time \(time) (outside 1980-01-06…2200-01-01)")
        }
        if !latitude.isNaN, !(latitude.isFinite && latitudeRange.contains(latitude)) {
            return .refused("latitude \(latitude.plainText) (outside -90…90)")
        }
        if !longitude.isNaN, !(longitude.isFinite && longitudeRange.contains(longitude)) {
            return .refused("longitude \(longitude.plainText) (outside -180…180)")
        }
        // Mode 2/3 without a position is not refused: gpsd itself sends such partial TPVs (a u-blox
        // receiver's epoch can start with one), and the epoch merger never makes a fix without a position.
        var leftOut: String?
        func within(_ value: Double, _ range: ClosedRange<Double>, _ name: String, _ unit: String) -> Double? {
            if value.isNaN { return nil }
            if value.isFinite, range.contains(value) { return value }
            if leftOut == nil {
                leftOut = "\(name) \(value.plainText) (outside \(range.lowerBound.plainText)…\(range.upperBound.plainText) \(unit))"
            }
            return nil
        }
        let fix = GPSDFix(
            mode: mode, time: time, latitude: latitude, longitude: longitude,
            altitudeMSL: within(altitudeMSL, altitudeRange, "altMSL", "m"),
            altitudeHAE: within(altitudeHAE, altitudeRange, "altHAE", "m"),
            eph: within(eph, distanceErrorRange, "eph", "m"),
            epx: within(epx, distanceErrorRange, "epx", "m"),
            epy: within(epy, distanceErrorRange, "epy", "m"),
            epv: within(epv, distanceErrorRange, "epv", "m"),
            speed: within(speed, speedRange, "speed", "m/s"),
            eps: within(eps, speedRange, "eps", "m/s"),
            track: within(track, angleRange, "track", "°"),
            epd: within(epd, angleRange, "epd", "°"),
            climb: within(climb, climbRange, "climb", "m/s"),
            device: device,
            correction: {
                switch status.map({ Self.correctionStatus(gpsdStatus: $0) }) {
                case .some(.some(let correction)): return correction
                default:
                    // A number gpsd does not use, or `statusText`: a value that is not a whole number at all.
                    if leftOut == nil { leftOut = "status \(statusText ?? status.map(String.init) ?? "?") (gpsd uses 0 to 9)" }
                    return nil
                }
            }())
        return .fix(fix, leftOut: leftOut)
    }
}

extension GPSDFix {
    /// gpsd's TPV `status` (libgps's `fix.status`) as a correction status: `.some(nil)` for 0, which gpsd
    /// uses for "unknown" and which libgps leaves when the TPV carries no status (gpsd 3.22 sends none on
    /// a plain GPS fix); `nil` for a number gpsd does not use (negative, or above 9).
    static func correctionStatus(gpsdStatus status: Int) -> CorrectionStatus?? {
        guard let value = Int32(exactly: status) else { return nil }
        switch value {
        case CGPS_STATUS_UNKNOWN: return .some(nil)
        case CGPS_STATUS_GPS: return .gps
        case CGPS_STATUS_DGPS: return .dgps
        case CGPS_STATUS_RTK_FIXED: return .rtkFixed
        case CGPS_STATUS_RTK_FLOAT: return .rtkFloat
        case CGPS_STATUS_DEAD_RECKONING: return .deadReckoning
        case CGPS_STATUS_GNSS_DEAD_RECKONING: return .gnssDeadReckoning
        case CGPS_STATUS_TIME_ONLY: return .timeOnly
        case CGPS_STATUS_SIMULATED: return .simulated
        case CGPS_STATUS_PRECISE_POSITIONING: return .precisePositioning
        default: return nil
        }
    }
}

extension Double {
    /// The value without a needless ".0": `90`, `-0.5`, `40000000`.
    var plainText: String {
        self == rounded() && abs(self) < 1e15 ? String(Int64(self)) : String(self)
    }
}
