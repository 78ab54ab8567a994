import Foundation
import LocationCore

/// One point of a GPX file (a `<trkpt>`, `<rtept>` or `<wpt>`), with where it sits in the file.
///
/// Every value the file does not carry is `nil`, never `0`: a point without `<ele>` has no
/// ``elevation``. Numbers are read exactly as written (the nearest `Double`), so a file written by
/// ``GPXWriter`` reads back bit for bit.
///
/// Besides the GPX 1.0 and 1.1 fields, the reader fills in the Garmin TrackPointExtension (v1 and v2,
/// matched by namespace URI) and this package's own `loc` extension (see <doc:LocationExtension>).
public struct GPXPoint: Sendable, Hashable {
    /// Which kind of GPX element a point came from.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// A `<trkpt>` inside `<trk><trkseg>`.
        case trackPoint = "trkpt"
        /// A `<rtept>` inside `<rte>`.
        case routePoint = "rtept"
        /// A `<wpt>` directly inside `<gpx>`.
        case waypoint = "wpt"
    }

    /// The GPX `<fix>` value.
    public enum Fix: String, Sendable, Hashable, CaseIterable {
        /// `none`: the receiver had no fix.
        case none
        /// `2d`
        case twoDimensional = "2d"
        /// `3d`
        case threeDimensional = "3d"
        /// `dgps`: differential GPS.
        case dgps
        /// `pps`: military signal.
        case pps
    }

    /// The element this point came from.
    public var kind: Kind
    /// For track points, the index of the `<trk>` among the file's tracks; for route points, the index of
    /// the `<rte>` among its routes; `0` for waypoints.
    public var container: Int
    /// For track points, the index of the `<trkseg>` inside its track; `0` otherwise.
    public var segment: Int
    /// The index of the point inside its segment, route, or the file's list of waypoints.
    public var index: Int
    /// The line of the file on which the point's start tag ends (1-based).
    public var line: Int

    /// Latitude in degrees (WGS84), in [-90, 90].
    public var latitude: Double
    /// Longitude in degrees (WGS84), in [-180, 180].
    public var longitude: Double
    /// `<ele>`: elevation in metres (above mean sea level, as GPX defines it).
    public var elevation: Double?
    /// `<time>`, as an instant. See ``timeHasZone`` for times written without a zone.
    public var time: Date?
    /// `false` when ``time`` was written without a zone designator (`2003-06-29T00:00:00`); such times
    /// are read as UTC, which is what GPX requires them to be.
    public var timeHasZone: Bool
    /// `<geoidheight>`: height of the geoid (mean sea level) above the WGS84 ellipsoid, in metres.
    public var geoidHeight: Double?
    /// `<name>`.
    public var name: String?
    /// `<src>`: where the data came from. ``GPXWriter`` writes `Location.source` here.
    public var sourceName: String?
    /// `<fix>`.
    public var fix: Fix?
    /// `<sat>`: satellites used for the fix.
    public var satellites: Int?
    /// `<hdop>`: horizontal dilution of precision (a ratio, not metres).
    public var hdop: Double?
    /// `<vdop>`: vertical dilution of precision.
    public var vdop: Double?
    /// `<pdop>`: position dilution of precision.
    public var pdop: Double?

    /// Speed over ground in metres per second, from GPX 1.0 `<speed>`, Garmin TrackPointExtension v2
    /// `<speed>` or `<loc:speed>`.
    public var speed: Double?
    /// Course over ground in degrees from true north, from GPX 1.0 `<course>`, Garmin
    /// TrackPointExtension v2 `<course>` or `<loc:course>`.
    public var course: Double?

    /// `<loc:horizontalAccuracy>`, in metres.
    public var horizontalAccuracy: Double?
    /// `<loc:verticalAccuracy>`, in metres.
    public var verticalAccuracy: Double?
    /// `<loc:speedAccuracy>`, in metres per second.
    public var speedAccuracy: Double?
    /// `<loc:courseAccuracy>`, in degrees.
    public var courseAccuracy: Double?
    /// `<loc:climb>`: vertical speed in metres per second, positive up.
    public var climb: Double?
    /// `<loc:ellipsoidalAltitude>`: height above the WGS84 ellipsoid, in metres.
    public var ellipsoidalAltitude: Double?
    /// `<loc:simulated>true</loc:simulated>`: the fix came from a simulation or replay.
    public var isSimulated: Bool
    /// `<loc:fixMode>` (`2D` or `3D`): the dimension of a fix whose `<fix>` is `dgps` or `pps`.
    public var fixMode: FixMode?
    /// `<loc:correctionStatus>`: how the fix was corrected, when `<fix>` cannot say it (RTK, dead
    /// reckoning, plain GPS stated as such...).
    public var correctionStatus: CorrectionStatus?
    /// `<loc:satellitesVisible>`: satellites in view, used or not.
    public var satellitesVisible: Int?

    /// Garmin TrackPointExtension `<hr>`: heart rate in beats per minute.
    public var heartRate: Int?
    /// Garmin TrackPointExtension `<cad>`: cadence in revolutions per minute.
    public var cadence: Int?
    /// Garmin TrackPointExtension `<atemp>`: air temperature in °C.
    public var airTemperature: Double?
    /// Garmin TrackPointExtension `<wtemp>`: water temperature in °C.
    public var waterTemperature: Double?
    /// Garmin TrackPointExtension `<depth>`: depth in metres.
    public var depth: Double?

    /// Creates a point; only the position and its place in the file are required.
    public init(
        kind: Kind = .trackPoint, container: Int = 0, segment: Int = 0, index: Int = 0, line: Int = 0,
        latitude: Double, longitude: Double, elevation: Double? = nil, time: Date? = nil,
        timeHasZone: Bool = true
    ) {
        self.kind = kind
        self.container = container
        self.segment = segment
        self.index = index
        self.line = line
        self.latitude = latitude
        self.longitude = longitude
        self.elevation = elevation
        self.time = time
        self.timeHasZone = timeHasZone
        self.isSimulated = false
    }

    /// The point as a `Location`.
    ///
    /// `altitude` is `<ele>`; `ellipsoidalAltitude` is `<loc:ellipsoidalAltitude>`, or else
    /// `<ele>` + `<geoidheight>` when both are present; `fixMode` is `<loc:fixMode>`, else comes from `<fix>`
    /// (`2d`, `3d`; other values give `nil`); `correctionStatus` is `<loc:correctionStatus>`, else `dgps`
    /// or `precisePositioning` from `<fix>` `dgps` or `pps` (else `nil`); `satellitesUsed` from `<sat>`;
    /// `satellitesVisible` from `<loc:satellitesVisible>`; `source` from `<src>`. Dilutions of precision are
    /// not accuracies and are not turned into them.
    ///
    /// - Parameter timestamp: used when the point has no `<time>`; `nil` makes an untimed point an error.
    /// - Throws: ``GPXError`` with code ``GPXError/Code/missingTime`` for an untimed point without a
    ///   fallback.
    public func location(timestampIfUntimed timestamp: Date? = nil) throws(GPXError) -> Location {
        guard let date = time ?? timestamp else {
            throw GPXError(
                .missingTime, file: nil, line: line, column: nil,
                "<\(kind.rawValue)> has no <time>, and no timestamp was given for untimed points")
        }
        return makeLocation(timestamp: date)
    }

    /// The point as a `Location` with the given timestamp (used by the replay source).
    func makeLocation(timestamp: Date) -> Location {
        var ellipsoidal = ellipsoidalAltitude
        if ellipsoidal == nil, let elevation, let geoidHeight { ellipsoidal = elevation + geoidHeight }
        let mode: FixMode? =
            fixMode
            ?? {
                switch fix {
                case .twoDimensional: .twoDimensional
                case .threeDimensional: .threeDimensional
                default: nil
                }
            }()
        let correction = correctionStatus ?? fix?.correction
        return Location(
            latitude: latitude, longitude: longitude, altitude: elevation, ellipsoidalAltitude: ellipsoidal,
            horizontalAccuracy: horizontalAccuracy, verticalAccuracy: verticalAccuracy, speed: speed,
            speedAccuracy: speedAccuracy, course: course, courseAccuracy: courseAccuracy, climb: climb,
            timestamp: timestamp, fixMode: mode, correctionStatus: correction, satellitesUsed: satellites,
            satellitesVisible: satellitesVisible, source: sourceName,
            isSimulated: isSimulated, hdop: hdop, vdop: vdop, pdop: pdop)
    }
}

extension GPXPoint.Fix {
    /// The `<fix>` value ``GPXWriter`` writes for a location: `dgps` for a differential or RTK fix, `pps` for
    /// a P(Y) fix, else `2d` or `3d` from its fix mode; `nil` when the location says neither.
    init?(_ location: Location) {
        if let status = location.correctionStatus, let fix = Self(correction: status) {
            self = fix
            return
        }
        switch location.fixMode {
        case .twoDimensional: self = .twoDimensional
        case .threeDimensional: self = .threeDimensional
        case nil: return nil
        }
    }

    /// The correction status this `<fix>` value states: `dgps` and `pps` do, the others do not.
    var correction: CorrectionStatus? {
        switch self {
        case .dgps: .dgps
        case .pps: .precisePositioning
        case .none, .twoDimensional, .threeDimensional: nil
        }
    }

    /// The `<fix>` value that says a correction status, if GPX has one: `dgps` for DGPS and RTK, `pps` for P(Y).
    init?(correction: CorrectionStatus) {
        switch correction {
        case .dgps, .rtkFixed, .rtkFloat: self = .dgps
        case .precisePositioning: self = .pps
        default: return nil
        }
    }
}
