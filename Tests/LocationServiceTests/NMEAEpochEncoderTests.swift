import Foundation
import LocationCore
import LocationService
import LocationTesting
import Testing

@Suite("NMEA sentences of a fix")
struct NMEAEpochEncoderTests {
    /// The sentences of `location`, each without its CR LF.
    static func sentences(_ location: Location) -> [String] {
        NMEAEpochEncoder.sentences(location).components(separatedBy: "\r\n").filter { !$0.isEmpty }
    }

    /// Whether `sentence` is `$BODY*CS` with the right checksum.
    static func hasValidChecksum(_ sentence: String) -> Bool {
        guard sentence.hasPrefix("$"), let star = sentence.lastIndex(of: "*") else { return false }
        let body = sentence[sentence.index(after: sentence.startIndex)..<star]
        let sum = body.utf8.reduce(UInt8(0)) { $0 ^ $1 }
        return sentence[sentence.index(after: star)...] == String(format: "%02X", sum)
    }

    static func fields(_ sentence: String) -> [String] {
        String(sentence.prefix { $0 != "*" }).components(separatedBy: ",")
    }

    @Test("a 3D fix is GGA, GSA and RMC with valid checksums, the field counts GeoClue needs and CR LF endings")
    func fullFix() throws {
        var location = LocationFixtures.walk(0)
        location.hdop = 0.9
        location.pdop = 1.6
        location.vdop = 1.3
        location.correctionStatus = .dgps
        let text = NMEAEpochEncoder.sentences(location)
        #expect(text.hasSuffix("\r\n"))
        #expect(!text.replacingOccurrences(of: "\r\n", with: "").contains("\n"))
        let sentences = Self.sentences(location)
        // The example of docs/NMEA.md, checksums computed apart.
        #expect(sentences == [
            "$GPGGA,060000.00,5231.200480,N,01324.297240,E,2,09,0.9,34.2,M,44.4,M,,*5D",
            "$GPGSA,A,3,,,,,,,,,,,,,1.6,0.9,1.3*3E",
            "$GPRMC,060000.00,A,5231.200480,N,01324.297240,E,2.72,45.0,010524,,,D*5C",
        ])
        #expect(sentences.map { String($0.prefix(6)) } == ["$GPGGA", "$GPGSA", "$GPRMC"])
        for sentence in sentences {
            #expect(Self.hasValidChecksum(sentence), "\(sentence)")
            #expect(sentence.utf8.count + 2 <= 82, "NMEA's longest sentence: \(sentence)")
        }
        // Time, coordinate, quality 2 (DGPS), satellites, HDOP, altitude, geoid separation.
        let gga = Self.fields(sentences[0])
        #expect(gga.count == 15)
        #expect(gga[1] == "060000.00")
        #expect(gga[2] == "5231.200480" && gga[4] == "01324.297240")
        #expect(gga[3] == "N" && gga[5] == "E" && gga[6] == "2" && gga[7] == "09" && gga[8] == "0.9")
        #expect(gga[9] == "34.2" && gga[10] == "M" && gga[11] == "44.4" && gga[12] == "M")
        let rmc = Self.fields(sentences[2])
        #expect(rmc.count == 13)
        #expect(rmc[2] == "A" && rmc[12] == "D")
        #expect(rmc[1] == gga[1] && rmc[9] == "010524")
        #expect(rmc[7] == String(format: "%.2f", 1.4 * 3600 / 1852))
        #expect(rmc[8] == "45.0")
        let gsa = Self.fields(sentences[1])
        #expect(gsa.count == 18)
        #expect(gsa[2] == "3" && gsa[15] == "1.6" && gsa[16] == "0.9" && gsa[17] == "1.3")
    }

    @Test("latitude and longitude read back from degrees and minutes to within a micro-minute")
    func coordinates() throws {
        let location = Location(latitude: 52.520008, longitude: 13.404954, timestamp: Date(timeIntervalSince1970: 1_764_309_600))
        let gga = Self.fields(Self.sentences(location)[0])
        #expect(gga[1] == "060000.00")
        #expect(gga[2] == "5231.200480" && gga[4] == "01324.297240")
        let rmc = Self.fields(Self.sentences(location).last ?? "")
        #expect(rmc[9] == "281125")
    }

    @Test("the poles, the antimeridian and the southern and western hemispheres")
    func extremes() throws {
        let time = Date(timeIntervalSince1970: 0)
        let cases: [(Double, Double, String, String)] = [
            (90, 180, "9000.000000,N", "18000.000000,E"),
            (-90, -180, "9000.000000,S", "18000.000000,W"),
            (-0.0000001, -0.0000001, "0000.000006,S", "00000.000006,W"),
            (-0.000000001, 0, "0000.000000,N", "00000.000000,E"),
            // 59.99999976 minutes round to the next degree, never to 60 minutes.
            (51.999999996, -0.999999996, "5200.000000,N", "00100.000000,W"),
        ]
        for (latitude, longitude, lat, lon) in cases {
            let gga = Self.sentences(Location(latitude: latitude, longitude: longitude, timestamp: time))[0]
            #expect(gga.contains(",\(lat),\(lon),"), "\(latitude) \(longitude): \(gga)")
        }
    }

    @Test("what the fix does not have is an empty field: no altitude, speed, course, HDOP or mode")
    func unknownValues() throws {
        let sentences = Self.sentences(Location(latitude: 1, longitude: 2, timestamp: Date(timeIntervalSince1970: 0)))
        #expect(sentences.count == 2, "no GSA without a fix mode: \(sentences)")
        #expect(Self.fields(sentences[0]) == ["$GPGGA", "000000.00", "0100.000000", "N", "00200.000000", "E", "1", "", "", "", "", "", "", "", ""])
        #expect(Self.fields(sentences[1]) == ["$GPRMC", "000000.00", "A", "0100.000000", "N", "00200.000000", "E", "", "", "010170", "", "", "A"])
    }

    @Test("a location without a valid coordinate or with a time no sentence can hold writes nothing")
    func nothingWithoutAFix() {
        let now = Date(timeIntervalSince1970: 1_764_309_600)
        for location in [
            Location(latitude: .nan, longitude: 1, timestamp: now),
            Location(latitude: 91, longitude: 1, timestamp: now),
            Location(latitude: 1, longitude: -180.5, timestamp: now),
            Location(latitude: 1, longitude: .infinity, timestamp: now),
            Location(latitude: 1, longitude: 1, timestamp: Date(timeIntervalSince1970: 1e300)),
            Location(latitude: 1, longitude: 1, timestamp: Date(timeIntervalSince1970: -1e300)),
        ] {
            var bytes: [UInt8] = []
            #expect(!NMEAEpochEncoder.append(location, to: &bytes))
            #expect(bytes.isEmpty)
        }
    }

    @Test("a time rounds once: 23:59:59.996 is the next day's 00:00:00.00")
    func roundedTime() throws {
        let location = Location(latitude: 1, longitude: 1, timestamp: Date(timeIntervalSince1970: 86_400 - 0.004))
        let rmc = Self.fields(Self.sentences(location)[1])
        #expect(rmc[1] == "000000.00" && rmc[9] == "020170")
    }

    @Test("values out of a field's range are left empty rather than written wider than a reader expects")
    func outOfRange() throws {
        var location = Location(latitude: 1, longitude: 1, altitude: 2e6, timestamp: Date(timeIntervalSince1970: 0), fixMode: .twoDimensional)
        location.hdop = 150
        location.satellitesUsed = 120
        location.speed = 1e9
        location.course = 400
        let sentences = Self.sentences(location)
        let gga = Self.fields(sentences[0])
        #expect(gga[7] == "" && gga[8] == "" && gga[9] == "" && gga[10] == "")
        #expect(Self.fields(sentences[1])[2] == "2")
        let rmc = Self.fields(sentences[2])
        #expect(rmc[7] == "" && rmc[8] == "")
    }

    @Test("a course that rounds to 360.0 is 0.0, and a value that rounds to zero has no sign")
    func roundedEdges() throws {
        var location = Location(latitude: 1, longitude: 1, altitude: -0.04, ellipsoidalAltitude: 0, timestamp: Date(timeIntervalSince1970: 0))
        location.course = 359.96
        let sentences = Self.sentences(location)
        let gga = Self.fields(sentences[0])
        #expect(gga[9] == "0.0" && gga[11] == "0.0", "\(sentences[0])")
        #expect(Self.fields(sentences[1])[8] == "0.0", "\(sentences[1])")
    }
}
