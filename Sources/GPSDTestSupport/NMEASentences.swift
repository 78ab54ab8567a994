import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// NMEA 0183 sentences for receivers that tests and benchmarks stand in for: a walk north-west from
/// 51.5 N 0.1 W, one step per epoch.
public enum NMEASentences {
    /// `$BODY*CS` with its checksum, without a line end.
    public static func checksummed(_ body: String) -> String {
        "$" + body + String(format: "*%02X", body.utf8.reduce(UInt8(0)) { $0 ^ $1 })
    }

    /// GGA and RMC of epoch `epoch` of a `rateHz` receiver whose epoch 0 is at `baseSeconds` since 1970.
    public static func ggaAndRMC(epoch: Int, rateHz: Int, baseSeconds: Int) -> (gga: String, rmc: String) {
        var value = time_t(baseSeconds + epoch / rateHz)
        var parts = tm()
        gmtime_r(&value, &parts)
        let time = String(format: "%02d%02d%02d.%02d", parts.tm_hour, parts.tm_min, parts.tm_sec, (epoch % rateHz) * 100 / rateHz)
        let date = String(format: "%02d%02d%02d", parts.tm_mday, parts.tm_mon + 1, parts.tm_year % 100)
        let lat = degrees(51.5 + Double(epoch % 100_000) * 0.00001, width: 2)
        let lon = degrees(0.1 + Double(epoch % 100_000) * 0.00001, width: 3)
        return (
            checksummed("GPGGA,\(time),\(lat),N,\(lon),W,1,09,0.9,35.0,M,47.0,M,,"),
            checksummed("GPRMC,\(time),A,\(lat),N,\(lon),W,2.7,45.0,\(date),,,A")
        )
    }

    /// `value` degrees as NMEA's DDDMM.MMMM with `width` digits of degrees.
    public static func degrees(_ value: Double, width: Int) -> String {
        let whole = Int(value)
        return String(format: "%0\(width)d%07.4f", whole, (value - Double(whole)) * 60)
    }
}
