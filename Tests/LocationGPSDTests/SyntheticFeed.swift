import Foundation

/// A generated NMEA capture (GGA + RMC per epoch) for tests that need a long, fast, steady feed.
///
/// The real captures are short; the duty-cycle test needs many epochs. The positions walk north-east
/// from 51.5 N 0.1 W at about 1 m per epoch; times start at 06:00:00Z on 1 May of `year` (2024 unless
/// told otherwise).
enum SyntheticFeed {
    /// Writes `epochs` epochs at `rateHz` into a new temporary file and returns its URL.
    static func write(epochs: Int, rateHz: Int, year: Int = 2024) throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("gpsd-synthetic-\(UUID().uuidString).log")
        var text = "# Generated 10 Hz NMEA feed for the duty-cycle test\n"
        for epoch in 0..<epochs {
            let hundredths = epoch * 100 / rateHz
            let seconds = hundredths / 100, fraction = hundredths % 100
            let time = String(format: "%02d%02d%02d.%02d", 6 + seconds / 3600, seconds / 60 % 60, seconds % 60, fraction)
            let latitude = 51.5 + Double(epoch) * 0.00001
            let longitude = 0.1 - Double(epoch) * 0.00001
            let lat = nmeaDegrees(latitude, width: 2)
            let lon = nmeaDegrees(longitude, width: 3)
            text += sentence("GPGGA,\(time),\(lat),N,\(lon),W,1,09,0.9,35.0,M,47.0,M,,") + "\r\n"
            text += sentence("GPRMC,\(time),A,\(lat),N,\(lon),W,2.7,45.0,0105\(String(format: "%02d", year % 100)),,,A") + "\r\n"
        }
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url
    }

    private static func nmeaDegrees(_ value: Double, width: Int) -> String {
        let degrees = Int(value)
        let minutes = (value - Double(degrees)) * 60
        return String(format: "%0\(width)d%07.4f", degrees, minutes)
    }

    private static func sentence(_ body: String) -> String {
        let checksum = body.utf8.reduce(UInt8(0)) { $0 ^ $1 }
        return "$" + body + String(format: "*%02X", checksum)
    }
}
