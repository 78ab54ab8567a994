import Foundation
import LocationCore
import LocationTesting
import Testing

@Suite("Location value and JSON")
struct LocationTests {
    @Test("non-finite values become nil, never 0 or NaN")
    func nonFiniteBecomesNil() {
        let location = Location(
            latitude: 1, longitude: 2, altitude: .nan, horizontalAccuracy: .infinity, speed: -.infinity,
            course: 10, timestamp: LocationFixtures.epoch)
        #expect(location.altitude == nil)
        #expect(location.horizontalAccuracy == nil)
        #expect(location.speed == nil)
        #expect(location.course == 10)
    }

    @Test("JSON uses the contract's names, omits absent fields, and writes the fix time exactly as seconds and as RFC 3339 UTC with milliseconds")
    func encodesContract() throws {
        let location = Location(
            latitude: 52.5, longitude: 13.25, altitude: 34.5, horizontalAccuracy: 4,
            timestamp: Date(timeIntervalSince1970: 1_714_543_200.25), fixMode: .threeDimensional,
            satellitesUsed: 9, source: "/dev/ttyACM0")
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = String(decoding: try encoder.encode(location), as: UTF8.self)
        #expect(
            json
                == #"{"altitude":34.5,"fixMode":"3D","horizontalAccuracy":4,"isSimulated":false,"latitude":52.5,"# +
                #""longitude":13.25,"satellitesUsed":9,"source":"\/dev\/ttyACM0","time":1714543200.25,"timestamp":"2024-05-01T06:00:00.250Z"}"#)
        #expect(!json.contains("speed"))
        #expect(!json.contains("null"))
    }

    @Test("JSON with only time, or only timestamp, decodes; time is read exactly and wins; with neither it is refused")
    func decodesEitherTime() throws {
        let decoder = JSONDecoder()
        let onlyTime = try decoder.decode(Location.self, from: Data(#"{"latitude": 52.5, "longitude": 13.4, "time": 1714543253.7176739}"#.utf8))
        #expect(onlyTime.timestamp == RFC3339.parse("2024-05-01T06:00:53.7176739Z")?.date)
        let onlyStamp = try decoder.decode(Location.self, from: Data(#"{"latitude":52.5,"longitude":13.4,"timestamp":"2024-05-01T06:00:00Z"}"#.utf8))
        #expect(onlyStamp.timestamp == Date(timeIntervalSince1970: 1_714_543_200))
        let both = try decoder.decode(Location.self, from: Data(#"{"latitude":52.5,"longitude":13.4,"time":1714543200.0001,"timestamp":"2024-05-01T06:00:00.000Z"}"#.utf8))
        #expect(both.timestamp == RFC3339.parse("2024-05-01T06:00:00.0001Z")?.date)
        #expect(throws: DecodingError.self) { try decoder.decode(Location.self, from: Data(#"{"latitude":52.5,"longitude":13.4}"#.utf8)) }
        #expect(throws: DecodingError.self) { try decoder.decode(Location.self, from: Data(#"{"latitude":52.5,"longitude":13.4,"time":1e300}"#.utf8)) }
    }

    @Test("JSON round trip is lossless for every field")
    func roundTrip() throws {
        var original = LocationFixtures.walk(17)
        original.hdop = 0.8
        original.pdop = 1.5
        let decoded = try JSONDecoder().decode(Location.self, from: JSONEncoder().encode(original))
        #expect(decoded == original)
    }

    @Test("decoding rejects a bad timestamp and an impossible coordinate with a clear message")
    func decodingRejectsBadInput() {
        let badTime = Data(#"{"latitude":1,"longitude":2,"timestamp":"yesterday"}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Location.self, from: badTime) }
        let badLatitude = Data(#"{"latitude":91,"longitude":2,"timestamp":"2024-01-01T00:00:00Z"}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Location.self, from: badLatitude) }
    }

    @Test("distance is the great-circle distance")
    func distance() {
        let a = Location(latitude: 0, longitude: 0, timestamp: LocationFixtures.epoch)
        let b = Location(latitude: 0, longitude: 1, timestamp: LocationFixtures.epoch)
        #expect(abs(a.distance(from: b) - 111_195) < 1)
    }
}
