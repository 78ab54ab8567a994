import Foundation

/// One satellite a receiver sees: what a sky view (gpsd's SKY, NMEA's GSV) says of it.
///
/// A value the receiver did not report is `nil`.
public struct Satellite: Sendable, Hashable, Codable {
    /// The satellites' systems.
    public enum Constellation: String, Sendable, Hashable, Codable, CaseIterable {
        /// The US Global Positioning System.
        case gps
        /// Satellite-based augmentation (WAAS, EGNOS, MSAS, GAGAN).
        case sbas
        /// The European Galileo.
        case galileo
        /// The Chinese BeiDou.
        case beidou
        /// Japan's indoor messaging system.
        case imes
        /// The Japanese Quasi-Zenith Satellite System.
        case qzss
        /// The Russian GLONASS.
        case glonass
        /// The Indian NavIC (IRNSS).
        case navic

        /// A short label for people: `GP`, `SB`, `GA`, `BD`, `IM`, `QZ`, `GL`, `IR`, the NMEA talkers' letters.
        public var label: String {
            switch self {
            case .gps: "GP"
            case .sbas: "SB"
            case .galileo: "GA"
            case .beidou: "BD"
            case .imes: "IM"
            case .qzss: "QZ"
            case .glonass: "GL"
            case .navic: "IR"
            }
        }
    }

    /// The satellite's number as the receiver reports it (gpsd's PRN: NMEA 2.x–4.0 numbering, 1 to 437).
    public var prn: Int
    /// Its system, when the receiver said.
    public var constellation: Constellation?
    /// Its number within its system (the native PRN), when the receiver said.
    public var systemNumber: Int?
    /// Degrees above the horizon, −90 to 90.
    public var elevation: Double?
    /// Degrees from true north, 0 to 360.
    public var azimuth: Double?
    /// Signal to noise ratio, dB-Hz.
    public var signalStrength: Double?
    /// Whether the fix uses it.
    public var isUsed: Bool

    /// Creates a satellite; non-finite or out-of-range values become `nil`.
    public init(
        prn: Int, constellation: Constellation? = nil, systemNumber: Int? = nil, elevation: Double? = nil,
        azimuth: Double? = nil, signalStrength: Double? = nil, isUsed: Bool = false
    ) {
        self.prn = prn
        self.constellation = constellation
        self.systemNumber = systemNumber
        self.elevation = elevation.flatMap { $0.isFinite && abs($0) <= 90 ? $0 : nil }
        self.azimuth = azimuth.flatMap { $0.isFinite && (0...360).contains($0) ? $0 : nil }
        self.signalStrength = signalStrength.flatMap { $0.isFinite && (0...254).contains($0) ? $0 : nil }
        self.isUsed = isUsed
    }
}
