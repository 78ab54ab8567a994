import LocationCore

/// One message read from gpsd, decoded out of libgps's struct into plain values.
///
/// Every value gpsd did not send is `nil` (libgps stores NaN for it).
enum GPSDReport: Sendable, Equatable {
    /// A TPV (time-position-velocity) report.
    case fix(GPSDFix)
    /// A SKY report: how many satellites the solution uses and how many are in view, and the dilutions of
    /// precision, when gpsd said; the sky view itself when the session reads satellites (a sky watch).
    case sky(
        satellitesUsed: Int?, satellitesVisible: Int? = nil, hdop: Double? = nil, vdop: Double? = nil,
        pdop: Double? = nil, view: SkyView? = nil)
    /// The list of receivers gpsd has (the DEVICES message sent after a WATCH).
    case devices(count: Int)
    /// gpsd's answer that it could not do what was asked (such as watching a device it does not have).
    case gpsdError(String)
    /// Anything else gpsd sends (VERSION, WATCH, DEVICE, GST, ATT, classes newer than this code...);
    /// counted, not used.
    case other
}

extension GPSDReport {
    /// Whether this is coherent data from a receiver (a no-fix TPV, a complete fix, or a SKY), the kind
    /// of message that shows gpsd is working again after an outage; handshakes and broken TPVs are not.
    var isReceiverData: Bool {
        switch self {
        case .fix(let fix): !fix.hasFix || (fix.time != nil && fix.latitude != nil && fix.longitude != nil)
        case .sky: true
        case .devices, .gpsdError, .other: false
        }
    }
}

extension Optional where Wrapped == Double {
    /// The value when it is finite; libgps marks absent values with NaN.
    var finiteValue: Double? {
        if let value = self, value.isFinite { value } else { nil }
    }
}
