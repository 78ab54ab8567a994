import Foundation
import LocationCore

/// Writes a fix as the NMEA 0183 (version 2.3) sentences of one receiver epoch: GGA and RMC, and GSA when
/// the fix mode is known; each with its checksum and a CR LF, as a receiver's serial port sends them.
///
/// For programs that read NMEA: GeoClue's `nmea-socket` source (it uses GGA and RMC only), chart plotters,
/// navit, OpenCPN, and gpsd itself over a pty or through gpsfake. The talker is `GP`, which every reader
/// takes. What the fix does not have is an empty field, never a made-up value: a replayed GPX point without
/// HDOP has an empty HDOP field (GeoClue then reads the best accuracy bucket; see docs/NMEA.md).
///
/// ```
/// $GPGGA,060000.00,5231.200480,N,01324.297240,E,2,09,0.9,34.2,M,44.4,M,,*5D
/// $GPGSA,A,3,,,,,,,,,,,,,1.6,0.9,1.3*3E
/// $GPRMC,060000.00,A,5231.200480,N,01324.297240,E,2.72,45.0,010524,,,D*5C
/// ```
///
/// A location without a valid coordinate writes nothing: GeoClue checks neither the GGA quality nor the RMC
/// status, so no sentence may ever stand for "no fix".
package enum NMEAEpochEncoder {
    /// Knots in a metre per second.
    static let knotsPerMetrePerSecond = 3600.0 / 1852.0

    /// The sentences of `location`'s epoch, appended to `bytes`; returns whether anything was written (not
    /// for a location without a valid coordinate or with a time outside the years 0000–9999).
    @discardableResult
    package static func append(_ location: Location, to bytes: inout [UInt8]) -> Bool {
        guard location.hasValidCoordinate, let time = Self.time(location.timestamp) else { return false }
        let latitude = coordinate(location.latitude, degreeDigits: 2, positive: "N", negative: "S")
        let longitude = coordinate(location.longitude, degreeDigits: 3, positive: "E", negative: "W")

        var gga = "GPGGA,\(time.clock),\(latitude),\(longitude),\(quality(location)),"
        if let used = location.satellitesUsed, (0...99).contains(used) { gga += used < 10 ? "0\(used)" : "\(used)" }
        gga += "," + number(location.hdop, digits: 1, range: 0...99.9)
        let altitude = number(location.altitude, digits: 1, range: -99_999...999_999)
        gga += "," + altitude + (altitude.isEmpty ? "," : ",M")
        var separation = ""
        if let above = location.ellipsoidalAltitude, let mean = location.altitude {
            separation = number(above - mean, digits: 1, range: -999...999)
        }
        gga += "," + separation + (separation.isEmpty ? "," : ",M") + ",,"
        appendSentence(gga, to: &bytes)

        if let mode = location.fixMode {
            var gsa = "GPGSA,A,\(mode == .threeDimensional ? 3 : 2)" + String(repeating: ",", count: 12)
            for dop in [location.pdop, location.hdop, location.vdop] { gsa += "," + number(dop, digits: 1, range: 0...99.9) }
            appendSentence(gsa, to: &bytes)
        }

        var rmc = "GPRMC,\(time.clock),A,\(latitude),\(longitude),"
        rmc += number(location.speed.map { $0 * knotsPerMetrePerSecond }, digits: 2, range: 0...99_999) + ","
        // 359.96° rounds to 360.0, which the field (0 to 359.9) does not hold: it is 0.0.
        let course = location.course.flatMap { (0...360).contains($0) ? (($0 * 10).rounded() / 10).truncatingRemainder(dividingBy: 360) : nil }
        rmc += number(course, digits: 1, range: 0...360) + ","
        rmc += "\(time.date),,,\(rmcMode(location))"
        appendSentence(rmc, to: &bytes)
        return true
    }

    /// The sentences of `location`'s epoch as text (empty for a location that writes nothing).
    package static func sentences(_ location: Location) -> String {
        var bytes: [UInt8] = []
        append(location, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `$BODY*CS\r\n`: the checksum is the XOR of the body's bytes, two upper-case hex digits.
    static func appendSentence(_ body: String, to bytes: inout [UInt8]) {
        let digits = Array("0123456789ABCDEF".utf8)
        var checksum: UInt8 = 0
        bytes.append(UInt8(ascii: "$"))
        for byte in body.utf8 {
            checksum ^= byte
            bytes.append(byte)
        }
        bytes.append(contentsOf: [UInt8(ascii: "*"), digits[Int(checksum >> 4)], digits[Int(checksum & 0xF)], 0x0D, 0x0A])
    }

    /// `hhmmss.ss` and `ddmmyy` of one rounded instant (23:59:59.996 is the next day's 00:00:00.00).
    static func time(_ date: Date) -> (clock: String, date: String)? {
        guard abs(date.timeIntervalSince1970) < 253_402_300_800 else { return nil }
        // YYYY-MM-DDTHH:MM:SS.ssZ
        let text = Array(RFC3339.string(from: date, fractionDigits: 2).utf8)
        guard text.count == 23 else { return nil }
        let clock = String(decoding: text[11..<13] + text[14..<16] + text[17..<22], as: UTF8.self)
        let day = String(decoding: text[8..<10] + text[5..<7] + text[2..<4], as: UTF8.self)
        return (clock, day)
    }

    /// `DDMM.MMMMMM,H` (latitude) or `DDDMM.MMMMMM,H` (longitude): minutes to six decimals (about 2 mm),
    /// rounded once in millionths of a minute so that 59.9999996′ becomes the next degree, never 60′.
    static func coordinate(_ degrees: Double, degreeDigits: Int, positive: String, negative: String) -> String {
        let millionths = Int((abs(degrees) * 60_000_000).rounded())
        let whole = millionths / 60_000_000
        let minutes = millionths % 60_000_000
        let wholeText = String(whole)
        let minuteText = String(minutes / 1_000_000)
        let fraction = String(minutes % 1_000_000)
        let hemisphere = degrees < 0 && millionths > 0 ? negative : positive
        return String(repeating: "0", count: max(0, degreeDigits - wholeText.count)) + wholeText
            + String(repeating: "0", count: 2 - minuteText.count) + minuteText + "."
            + String(repeating: "0", count: 6 - fraction.count) + fraction + "," + hemisphere
    }

    /// A value with `digits` decimals, or an empty field when it is unknown, not finite or outside `range`.
    static func number(_ value: Double?, digits: Int, range: ClosedRange<Double>) -> String {
        guard let value, value.isFinite, range.contains(value) else { return "" }
        let text = String(format: "%.\(digits)f", value)
        // -0.04 written with one decimal is "-0.0": zero has no sign.
        return text.hasPrefix("-") && text.allSatisfy({ $0 == "-" || $0 == "0" || $0 == "." }) ? String(text.dropFirst()) : text
    }

    /// GGA's fix quality: 1 GPS, 2 DGPS, 3 PPS, 4 RTK fixed, 5 RTK float, 6 dead reckoning, 8 simulation. A
    /// replay is an ordinary fix (1): a chart plotter shows quality 8 as no fix.
    static func quality(_ location: Location) -> Int {
        switch location.correctionStatus {
        case .dgps: 2
        case .precisePositioning: 3
        case .rtkFixed: 4
        case .rtkFloat: 5
        case .deadReckoning: 6
        case .simulated: 8
        case .gps, .gnssDeadReckoning, .timeOnly, nil: 1
        }
    }

    /// RMC's mode (NMEA 2.3): A autonomous, D differential (DGPS, RTK, PPS), E estimated, S simulator.
    static func rmcMode(_ location: Location) -> String {
        switch location.correctionStatus {
        case .dgps, .rtkFixed, .rtkFloat, .precisePositioning: "D"
        case .deadReckoning: "E"
        case .simulated: "S"
        case .gps, .gnssDeadReckoning, .timeOnly, nil: "A"
        }
    }
}
