import Foundation

/// A circle on the Earth to monitor: a centre, a radius in metres and an identifier, as Core Location's
/// `CLCircularRegion` (see ``RegionMonitor``).
public struct CircularRegion: Sendable, Hashable, Codable {
    /// The name events carry: unique within a monitor, 1 to ``maximumIdentifierLength`` bytes of UTF-8
    /// without control characters.
    public let identifier: String
    /// The centre's latitude in degrees, −90 to 90.
    public let latitude: Double
    /// The centre's longitude in degrees, −180 to 180.
    public let longitude: Double
    /// The radius in metres, 0 to ``maximumRadius`` (half the Earth's circumference: every point).
    public let radius: Double
    /// How long a stay inside must last, in fix time, before a ``RegionEvent/Kind/dwell`` event; `nil` for
    /// none.
    public let loiteringDelay: Duration?

    /// The longest identifier, in bytes.
    public static let maximumIdentifierLength = 256
    /// The largest radius: half the mean Earth circumference, about 20,015 km.
    public static let maximumRadius = Double.pi * Location.meanEarthRadius

    /// A region; throws ``LocationError/Code/invalidConfiguration`` naming what is out of range (a
    /// coordinate off the Earth, a radius that is negative, not finite or beyond ``maximumRadius``, an
    /// identifier that is empty, too long or holds a control character, a negative delay).
    public init(
        identifier: String, latitude: Double, longitude: Double, radius: Double, loiteringDelay: Duration? = nil
    ) throws(LocationError) {
        func bad(_ reason: String) -> LocationError {
            // Quoted with what cannot be shown escaped (a U+202E would turn the line around on a terminal).
            let shown = "\"" + ValueRange.printable(identifier, limit: 64) + "\""
            return LocationError(.invalidConfiguration, "region \(shown): \(reason)")
        }
        guard !identifier.isEmpty, identifier.utf8.count <= Self.maximumIdentifierLength,
            !identifier.unicodeScalars.contains(where: Self.isHidden)
        else {
            throw bad("an identifier is 1 to \(Self.maximumIdentifierLength) bytes without control or invisible formatting characters")
        }
        guard latitude.isFinite, abs(latitude) <= 90 else { throw bad("latitude \(latitude) is outside −90…90") }
        guard longitude.isFinite, abs(longitude) <= 180 else { throw bad("longitude \(longitude) is outside −180…180") }
        guard radius.isFinite, radius >= 0, radius <= Self.maximumRadius else {
            throw bad("radius \(radius) m is outside 0…\(Int(Self.maximumRadius)) m")
        }
        if let loiteringDelay, loiteringDelay < .zero { throw bad("a loitering delay cannot be negative") }
        self.identifier = identifier
        self.latitude = latitude
        self.longitude = longitude
        self.radius = radius
        self.loiteringDelay = loiteringDelay
    }

    private enum CodingKeys: String, CodingKey {
        case identifier, latitude, longitude, radius, loiteringDelay
    }

    /// Decodes a region, checking it as ``init(identifier:latitude:longitude:radius:loiteringDelay:)`` does;
    /// the delay is in seconds.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let delay = try container.decodeIfPresent(Double.self, forKey: .loiteringDelay)
        if let delay, !(delay.isFinite && delay >= 0 && delay <= 1e9) {
            throw DecodingError.dataCorruptedError(forKey: .loiteringDelay, in: container, debugDescription: "not 0…1e9 seconds")
        }
        let identifier = try container.decode(String.self, forKey: .identifier)
        let latitude = try container.decode(Double.self, forKey: .latitude)
        let longitude = try container.decode(Double.self, forKey: .longitude)
        let radius = try container.decode(Double.self, forKey: .radius)
        do throws(LocationError) {
            try self.init(identifier: identifier, latitude: latitude, longitude: longitude, radius: radius, loiteringDelay: delay.map { .seconds($0) })
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.message))
        }
    }

    /// Encodes the region (the delay in seconds).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(identifier, forKey: .identifier)
        try container.encode(latitude, forKey: .latitude)
        try container.encode(longitude, forKey: .longitude)
        try container.encode(radius, forKey: .radius)
        try container.encodeIfPresent(loiteringDelay?.seconds, forKey: .loiteringDelay)
    }

    /// Control characters, and the invisible ones that reorder or break a line on a terminal (U+202E, U+2028).
    package static func isHidden(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) { return true }
        switch scalar.properties.generalCategory {
        case .format, .lineSeparator, .paragraphSeparator: return true
        default: return false
        }
    }

    /// The distance in metres from the centre to `location`.
    public func distance(to location: Location) -> Double {
        Location.distance(fromLatitude: latitude, longitude: longitude, toLatitude: location.latitude, longitude: location.longitude)
    }

    /// How far outside the radius a fix must be (less its accuracy) to count towards an exit: a tenth of the
    /// radius, at least 20 m.
    public var exitMargin: Double { max(0.1 * radius, 20) }
}
