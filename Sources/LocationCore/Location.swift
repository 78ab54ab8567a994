import Foundation

/// One position fix: where the receiver was, how sure it is, and when.
///
/// Every value the receiver did not report is `nil`, never `0` and never NaN: the initializer turns
/// non-finite numbers into `nil`, so a `Location` can be trusted as it is.
///
/// In JSON the property names are used as keys, absent values are omitted, and ``timestamp`` is
/// written as an RFC 3339 UTC string (`2024-05-01T06:00:00.25Z`).
public struct Location: Sendable, Hashable {
    /// Latitude in degrees (WGS84), positive north.
    public var latitude: Double
    /// Longitude in degrees (WGS84), positive east.
    public var longitude: Double
    /// Altitude above mean sea level, in metres.
    public var altitude: Double?
    /// Height above the WGS84 ellipsoid, in metres.
    public var ellipsoidalAltitude: Double?
    /// Radius of horizontal uncertainty, in metres: the smaller, the better.
    ///
    /// What the radius means depends on the source, and no source states a confidence level:
    /// - From gpsd it is gpsd's `eph`, the "estimated horizontal position (2D) error". gpsd passes on
    ///   the receiver's own estimate when the receiver reports one, else computes it from the satellite
    ///   geometry (HDOP times an assumed range error). gpsd's protocol documentation (gpsd_json(5)) says of
    ///   all its error estimates that they are *guessed* to be 95 % confidence but may be 50 %, one sigma or
    ///   two sigma, since most receivers do not say; use them as a relative measure of goodness. When gpsd
    ///   sends no `eph` but both `epx` and `epy` (longitude and latitude errors), this is
    ///   √(epx² + epy²), a radius that covers both axis errors.
    /// - From a replayed GPX file it is whatever the file's `loc:horizontalAccuracy` element says (this
    ///   project's GPX writer puts the recorded fix's value there, so a recorded gpsd track replays with
    ///   gpsd's `eph`), else `nil`: plain GPX holds no error in metres, only dilutions of precision
    ///   (`<hdop>`, kept in ``hdop``), which are ratios and are not turned into metres.
    public var horizontalAccuracy: Double?
    /// Vertical uncertainty, in metres.
    public var verticalAccuracy: Double?
    /// Speed over ground, in metres per second.
    public var speed: Double?
    /// Uncertainty of ``speed``, in metres per second.
    public var speedAccuracy: Double?
    /// Course over ground, in degrees clockwise from true north.
    public var course: Double?
    /// Uncertainty of ``course``, in degrees.
    public var courseAccuracy: Double?
    /// Vertical speed, in metres per second, positive up.
    public var climb: Double?
    /// The time of the fix as the receiver reported it (not the time it arrived).
    public var timestamp: Date
    /// Whether the fix is two- or three-dimensional.
    public var fixMode: FixMode?
    /// How the fix was corrected (plain GPS, DGPS, RTK fixed or float, dead reckoning...), when the source
    /// said; see ``CorrectionStatus`` for what `nil` means from gpsd.
    public var correctionStatus: CorrectionStatus?
    /// Number of satellites used in the solution.
    public var satellitesUsed: Int?
    /// Number of satellites the receiver sees (in view), used or not; at least ``satellitesUsed`` when
    /// both are known.
    public var satellitesVisible: Int?
    /// Where the fix came from: a gpsd device path, a replayed file name, or a test script.
    public var source: String?
    /// Whether the fix was produced by a simulation or replay rather than a live receiver.
    public var isSimulated: Bool
    /// Horizontal dilution of precision: how the satellite geometry scales horizontal error.
    public var hdop: Double?
    /// Vertical dilution of precision.
    public var vdop: Double?
    /// Position (3D) dilution of precision.
    public var pdop: Double?

    /// Creates a location; non-finite optional values and negative satellite counts become `nil`.
    public init(
        latitude: Double,
        longitude: Double,
        altitude: Double? = nil,
        ellipsoidalAltitude: Double? = nil,
        horizontalAccuracy: Double? = nil,
        verticalAccuracy: Double? = nil,
        speed: Double? = nil,
        speedAccuracy: Double? = nil,
        course: Double? = nil,
        courseAccuracy: Double? = nil,
        climb: Double? = nil,
        timestamp: Date,
        fixMode: FixMode? = nil,
        correctionStatus: CorrectionStatus? = nil,
        satellitesUsed: Int? = nil,
        satellitesVisible: Int? = nil,
        source: String? = nil,
        isSimulated: Bool = false,
        hdop: Double? = nil,
        vdop: Double? = nil,
        pdop: Double? = nil
    ) {
        self.latitude = latitude
        self.longitude = longitude
        self.altitude = altitude.finite
        self.ellipsoidalAltitude = ellipsoidalAltitude.finite
        self.horizontalAccuracy = horizontalAccuracy.finite
        self.verticalAccuracy = verticalAccuracy.finite
        self.speed = speed.finite
        self.speedAccuracy = speedAccuracy.finite
        self.course = course.finite
        self.courseAccuracy = courseAccuracy.finite
        self.climb = climb.finite
        self.timestamp = timestamp
        self.fixMode = fixMode
        self.correctionStatus = correctionStatus
        self.satellitesUsed = satellitesUsed.flatMap { $0 >= 0 ? $0 : nil }
        self.satellitesVisible = satellitesVisible.flatMap { $0 >= 0 ? $0 : nil }
        self.source = source
        self.isSimulated = isSimulated
        self.hdop = hdop.finite
        self.vdop = vdop.finite
        self.pdop = pdop.finite
    }

    /// Whether latitude and longitude are finite and inside [-90, 90] × [-180, 180].
    public var hasValidCoordinate: Bool {
        latitude.isFinite && longitude.isFinite && abs(latitude) <= 90 && abs(longitude) <= 180
    }

    /// The mean Earth radius in metres (IUGG), the sphere every distance here is measured on.
    package static let meanEarthRadius = 6_371_008.8

    /// Great-circle distance to another location in metres (haversine on a sphere of mean Earth radius).
    public func distance(from other: Location) -> Double {
        Self.distance(
            fromLatitude: latitude, longitude: longitude, toLatitude: other.latitude, longitude: other.longitude)
    }

    /// The great-circle distance in metres between two coordinates in degrees (haversine, mean Earth
    /// radius), as ``distance(from:)`` computes it, without building `Location`s.
    public static func distance(
        fromLatitude latitude1: Double, longitude longitude1: Double,
        toLatitude latitude2: Double, longitude longitude2: Double
    ) -> Double {
        let earthRadius = meanEarthRadius
        let lat1 = latitude1 * .pi / 180, lat2 = latitude2 * .pi / 180
        let dLat = lat2 - lat1
        let dLon = (longitude2 - longitude1) * .pi / 180
        let a = sin(dLat / 2) * sin(dLat / 2) + cos(lat1) * cos(lat2) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * earthRadius * asin(min(1, a.squareRoot()))
    }

    /// Whether two fixes are the same observation: same fix time and same coordinate.
    public func isDuplicate(of other: Location) -> Bool {
        timestamp == other.timestamp && latitude == other.latitude && longitude == other.longitude
    }
}

/// The dimension of a position fix.
public enum FixMode: String, Sendable, Hashable, Codable, CaseIterable {
    /// Latitude and longitude only.
    case twoDimensional = "2D"
    /// Latitude, longitude and altitude.
    case threeDimensional = "3D"
}

extension Optional where Wrapped == Double {
    /// The value if it is finite, else `nil`.
    @inlinable var finite: Double? {
        switch self {
        case .some(let value) where value.isFinite: value
        default: nil
        }
    }
}

extension Location: Codable {
    private enum CodingKeys: String, CodingKey {
        case latitude, longitude, altitude, ellipsoidalAltitude, horizontalAccuracy, verticalAccuracy
        case speed, speedAccuracy, course, courseAccuracy, climb, timestamp, fixMode, correctionStatus
        case satellitesUsed, satellitesVisible, source, isSimulated, hdop, vdop, pdop, time
    }

    /// Decodes a location: its fix time from `time` (seconds since 1970, read exactly from its digits) when
    /// present, else from `timestamp`, which must be an RFC 3339 string.
    ///
    /// A `correctionStatus` this build does not know, and a negative satellite count, are left out
    /// (`nil`) rather than refusing the whole location.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        var timestamp: Date?
        if let text = try container.decodeIfPresent(String.self, forKey: .timestamp) {
            guard let parsed = RFC3339.parse(text) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .timestamp, in: container,
                    debugDescription: "timestamp '\(text)' is not an RFC 3339 date-time")
            }
            timestamp = parsed.date
        }
        if let seconds = try container.decodeIfPresent(Decimal.self, forKey: .time) {
            var digits = Array(seconds.description.utf8)
            guard let exact = digits.withUnsafeMutableBufferPointer({ RFC3339.parseSeconds(UnsafeBufferPointer($0)) }) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .time, in: container,
                    debugDescription: "time \(seconds) is not a time in years 0000–9999 in seconds since 1970")
            }
            timestamp = exact
        }
        guard let timestamp else {
            throw DecodingError.keyNotFound(
                CodingKeys.timestamp, .init(codingPath: container.codingPath, debugDescription: "a location needs a time or a timestamp"))
        }
        let latitude = try container.decode(Double.self, forKey: .latitude)
        let longitude = try container.decode(Double.self, forKey: .longitude)
        self.init(
            latitude: latitude,
            longitude: longitude,
            altitude: try container.decodeIfPresent(Double.self, forKey: .altitude),
            ellipsoidalAltitude: try container.decodeIfPresent(Double.self, forKey: .ellipsoidalAltitude),
            horizontalAccuracy: try container.decodeIfPresent(Double.self, forKey: .horizontalAccuracy),
            verticalAccuracy: try container.decodeIfPresent(Double.self, forKey: .verticalAccuracy),
            speed: try container.decodeIfPresent(Double.self, forKey: .speed),
            speedAccuracy: try container.decodeIfPresent(Double.self, forKey: .speedAccuracy),
            course: try container.decodeIfPresent(Double.self, forKey: .course),
            courseAccuracy: try container.decodeIfPresent(Double.self, forKey: .courseAccuracy),
            climb: try container.decodeIfPresent(Double.self, forKey: .climb),
            timestamp: timestamp,
            fixMode: try container.decodeIfPresent(FixMode.self, forKey: .fixMode),
            correctionStatus: (try container.decodeIfPresent(String.self, forKey: .correctionStatus))
                .flatMap(CorrectionStatus.init(rawValue:)),
            satellitesUsed: try container.decodeIfPresent(Int.self, forKey: .satellitesUsed),
            satellitesVisible: try container.decodeIfPresent(Int.self, forKey: .satellitesVisible),
            source: try container.decodeIfPresent(String.self, forKey: .source),
            isSimulated: try container.decodeIfPresent(Bool.self, forKey: .isSimulated) ?? false,
            hdop: try container.decodeIfPresent(Double.self, forKey: .hdop),
            vdop: try container.decodeIfPresent(Double.self, forKey: .vdop),
            pdop: try container.decodeIfPresent(Double.self, forKey: .pdop)
        )
        guard hasValidCoordinate else {
            throw DecodingError.dataCorruptedError(
                forKey: .latitude, in: container,
                debugDescription: "coordinate (\(latitude), \(longitude)) is outside [-90, 90] × [-180, 180]")
        }
    }

    /// Encodes the location, omitting absent values, with its fix time as `time` (seconds since 1970, exact)
    /// and `timestamp` (RFC 3339 UTC with milliseconds).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(latitude, forKey: .latitude)
        try container.encode(longitude, forKey: .longitude)
        try container.encodeIfPresent(altitude, forKey: .altitude)
        try container.encodeIfPresent(ellipsoidalAltitude, forKey: .ellipsoidalAltitude)
        try container.encodeIfPresent(horizontalAccuracy, forKey: .horizontalAccuracy)
        try container.encodeIfPresent(verticalAccuracy, forKey: .verticalAccuracy)
        try container.encodeIfPresent(speed, forKey: .speed)
        try container.encodeIfPresent(speedAccuracy, forKey: .speedAccuracy)
        try container.encodeIfPresent(course, forKey: .course)
        try container.encodeIfPresent(courseAccuracy, forKey: .courseAccuracy)
        try container.encodeIfPresent(climb, forKey: .climb)
        var seconds: [UInt8] = []
        RFC3339.appendSeconds(timestamp, to: &seconds)
        if let exact = Decimal(string: String(decoding: seconds, as: UTF8.self)) {
            try container.encode(exact, forKey: .time)
        }
        try container.encode(RFC3339.string(from: timestamp, fractionDigits: 3), forKey: .timestamp)
        try container.encodeIfPresent(fixMode, forKey: .fixMode)
        try container.encodeIfPresent(correctionStatus, forKey: .correctionStatus)
        try container.encodeIfPresent(satellitesUsed, forKey: .satellitesUsed)
        try container.encodeIfPresent(satellitesVisible, forKey: .satellitesVisible)
        try container.encodeIfPresent(source, forKey: .source)
        try container.encode(isSimulated, forKey: .isSimulated)
        try container.encodeIfPresent(hdop, forKey: .hdop)
        try container.encodeIfPresent(vdop, forKey: .vdop)
        try container.encodeIfPresent(pdop, forKey: .pdop)
    }
}
