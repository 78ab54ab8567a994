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

    init(
        mode: Int, time: GPSDTime? = nil, latitude: Double? = nil, longitude: Double? = nil,
        altitudeMSL: Double? = nil, altitudeHAE: Double? = nil, eph: Double? = nil, epx: Double? = nil,
        epy: Double? = nil, epv: Double? = nil, speed: Double? = nil, eps: Double? = nil,
        track: Double? = nil, epd: Double? = nil, climb: Double? = nil, device: String? = nil
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
    }
}
