/// The XML namespaces LocationGPX reads and writes. Elements are matched by namespace URI, never by prefix.
public enum GPXNamespace {
    /// GPX 1.1: `http://www.topografix.com/GPX/1/1`.
    public static let gpx11 = "http://www.topografix.com/GPX/1/1"
    /// GPX 1.0: `http://www.topografix.com/GPX/1/0`.
    public static let gpx10 = "http://www.topografix.com/GPX/1/0"
    /// Garmin TrackPointExtension v1: `http://www.garmin.com/xmlschemas/TrackPointExtension/v1`.
    public static let garminTrackPointV1 = "http://www.garmin.com/xmlschemas/TrackPointExtension/v1"
    /// Garmin TrackPointExtension v2: `http://www.garmin.com/xmlschemas/TrackPointExtension/v2`.
    public static let garminTrackPointV2 = "http://www.garmin.com/xmlschemas/TrackPointExtension/v2"
    /// This package's extension for the parts of a `Location` GPX 1.1 has no element for:
    /// `https://swift-location.dev/xmlns/gpx-location/1`. See <doc:LocationExtension>.
    public static let location = "https://swift-location.dev/xmlns/gpx-location/1"
    /// The prefix ``GPXWriter`` binds ``location`` to (readers must not rely on it).
    public static let locationPrefix = "loc"
}
