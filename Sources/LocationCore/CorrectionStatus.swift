/// How a fix was corrected or produced, beyond its dimension: plain GNSS, differential corrections,
/// RTK, dead reckoning, a surveyed position, a simulation.
///
/// This is what a GPS user checks first next to the fix mode: an RTK-fixed position is good to
/// centimetres, a plain GPS one to metres, and a dead-reckoned one may have drifted.
///
/// ``Location/correctionStatus`` is `nil` when the source did not say. gpsd 3.22 reports its `status`
/// only for a corrected or otherwise special fix and omits it on a plain GPS fix, so from gpsd `nil` on
/// a 2D or 3D fix usually means plain GPS; ``gps`` is given only when a source states it.
///
/// In JSON the raw values below are used (`"correctionStatus":"rtk-fixed"`).
public enum CorrectionStatus: String, Sendable, Hashable, Codable, CaseIterable {
    /// Plain GNSS (standard positioning service), without differential or other corrections.
    case gps = "gps"
    /// Differential GNSS: corrections from SBAS (WAAS, EGNOS) or a DGPS beacon.
    case dgps = "dgps"
    /// Real-time kinematic with integer ambiguities fixed: the most accurate kind (centimetres).
    case rtkFixed = "rtk-fixed"
    /// Real-time kinematic with floating ambiguities (decimetres).
    case rtkFloat = "rtk-float"
    /// Dead reckoning alone: the position was carried forward from motion sensors, without satellites.
    case deadReckoning = "dead-reckoning"
    /// Satellites combined with dead reckoning.
    case gnssDeadReckoning = "gnss-dead-reckoning"
    /// A fixed, surveyed-in or manually entered position, as a timing receiver reports it.
    case timeOnly = "time-only"
    /// A simulated fix (a receiver's simulator mode).
    case simulated = "simulated"
    /// Precise Positioning Service: the encrypted military P(Y) code (GPX calls this `pps`).
    case precisePositioning = "pps"

    /// A one-byte code for compact storage (the journal and the held batch): 1 to 9 in declaration order.
    /// Codes are never reused; a code this build does not know reads as `nil`.
    package var code: UInt8 {
        switch self {
        case .gps: 1
        case .dgps: 2
        case .rtkFixed: 3
        case .rtkFloat: 4
        case .deadReckoning: 5
        case .gnssDeadReckoning: 6
        case .timeOnly: 7
        case .simulated: 8
        case .precisePositioning: 9
        }
    }

    /// The status stored as `code`, or `nil` for a code this build does not know (0 included).
    package init?(code: UInt8) {
        guard let status = Self.allCases.first(where: { $0.code == code }) else { return nil }
        self = status
    }

    /// Whether the fix had differential or RTK corrections: ``dgps``, ``rtkFixed`` or ``rtkFloat``.
    public var isDifferential: Bool {
        self == .dgps || self == .rtkFixed || self == .rtkFloat
    }
}
