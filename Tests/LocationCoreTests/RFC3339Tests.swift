import Foundation
import LocationCore
import Testing

@Suite("RFC 3339 parsing and formatting")
struct RFC3339Tests {
    @Test(
        "real-world variants parse to the right instant",
        arguments: [
            ("2024-05-01T06:00:00Z", 1_714_543_200.0, true),
            ("2024-05-01T06:00:26.000Z", 1_714_543_226.0, true),
            ("2024-05-01T06:00:47.8Z", 1_714_543_247.8, true),
            ("2024-05-01T06:00:53.7176739Z", 1_714_543_253.717_673_9, true),
            ("2024-05-01T07:00:13.994+01:00", 1_714_543_213.994, true),
            ("2024-05-01T01:00:00-0500", 1_714_543_200.0, true),
            ("2024-05-01T06:00:00", 1_714_543_200.0, false),
            ("2024-05-01 06:00:00Z", 1_714_543_200.0, true),
            ("2024-05-01t06:00:00z", 1_714_543_200.0, true),
            ("  2024-05-01T06:00:00.123456789Z\n", 1_714_543_200.123_456_789, true),
            ("2016-12-31T23:59:60Z", 1_483_228_800.0, true),
        ])
    func parsesVariants(text: String, expected: Double, hasZone: Bool) throws {
        let parsed = try #require(RFC3339.parse(text))
        #expect(abs(parsed.date.timeIntervalSince1970 - expected) < 1e-6)
        #expect(parsed.hasZone == hasZone)
    }

    @Test(
        "malformed and impossible dates are rejected",
        arguments: [
            "", "2024", "2024-13-01T00:00:00Z", "2023-02-29T00:00:00Z", "2024-04-31T00:00:00Z",
            "2024-05-01T24:00:00Z", "2024-05-01T06:60:00Z", "2024-05-01T06:00:61Z", "2024-05-01T06:00:00.Z",
            "2024-05-01T06:00:00+25:00", "2024-05-01T06:00:00Zjunk", "2024/05/01T06:00:00Z", "yesterday",
        ])
    func rejectsInvalid(text: String) {
        #expect(RFC3339.parse(text) == nil)
    }

    @Test("leap day of a leap year is valid")
    func leapDay() {
        #expect(RFC3339.parse("2024-02-29T12:00:00Z") != nil)
        #expect(RFC3339.parse("2000-02-29T12:00:00Z") != nil)
        #expect(RFC3339.parse("1900-02-29T12:00:00Z") == nil)
    }

    @Test("formatting writes the shortest fraction that round-trips exactly")
    func shortestRoundTrip() throws {
        #expect(RFC3339.string(from: Date(timeIntervalSince1970: 1_714_543_200)) == "2024-05-01T06:00:00Z")
        #expect(RFC3339.string(from: Date(timeIntervalSince1970: 1_714_543_200.5)) == "2024-05-01T06:00:00.5Z")
        #expect(RFC3339.string(from: Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00Z")
        #expect(RFC3339.string(from: Date(timeIntervalSince1970: -1.25)) == "1969-12-31T23:59:58.75Z")
        var generator = SystemRandomNumberGenerator()
        for digits in 0...7 {
            for _ in 0..<300 {
                // Times as receivers and files write them: whole seconds plus up to 7 fraction digits.
                let scale = pow(10.0, Double(digits))
                let fraction = Double(Int.random(in: 0..<Int(scale), using: &generator)) / scale
                let seconds = Double(Int.random(in: -2_000_000_000...4_000_000_000, using: &generator))
                let date = Date(timeIntervalSinceReferenceDate: seconds - 978_307_200 + fraction)
                let text = RFC3339.string(from: date)
                #expect(RFC3339.parse(text)?.date == date, "\(text)")
            }
        }
        // Arbitrary doubles may carry sub-nanosecond parts; they come back within a nanosecond.
        for _ in 0..<2000 {
            let date = Date(timeIntervalSince1970: Double.random(in: -2e9...4e9, using: &generator))
            let back = try #require(RFC3339.parse(RFC3339.string(from: date))).date
            #expect(abs(back.timeIntervalSince(date)) <= 1e-9)
        }
        for text in ["2024-05-01T06:00:53.7176739Z", "2024-05-01T06:00:26.001Z", "1999-12-31T23:59:59.9Z"] {
            #expect(RFC3339.string(from: try #require(RFC3339.parse(text)).date) == text)
        }
    }

    @Test("fixed fractional digits are always that many, rounded, a carry moving the second (and the day)")
    func fixedDigits() {
        let base = 1_714_543_200.0
        #expect(RFC3339.string(from: Date(timeIntervalSince1970: base), fractionDigits: 3) == "2024-05-01T06:00:00.000Z")
        #expect(RFC3339.string(from: Date(timeIntervalSince1970: base + 0.25), fractionDigits: 3) == "2024-05-01T06:00:00.250Z")
        #expect(RFC3339.string(from: Date(timeIntervalSince1970: base + 0.1234567), fractionDigits: 3) == "2024-05-01T06:00:00.123Z")
        #expect(RFC3339.string(from: Date(timeIntervalSince1970: base - 0.0004), fractionDigits: 3) == "2024-05-01T06:00:00.000Z")
        #expect(RFC3339.string(from: Date(timeIntervalSince1970: base - 0.0006), fractionDigits: 3) == "2024-05-01T05:59:59.999Z")
        #expect(RFC3339.string(from: Date(timeIntervalSince1970: base + 0.9996), fractionDigits: 3) == "2024-05-01T06:00:01.000Z")
        #expect(RFC3339.string(from: Date(timeIntervalSince1970: 1_714_521_599.9999), fractionDigits: 3) == "2024-05-01T00:00:00.000Z")
        #expect(RFC3339.string(from: Date(timeIntervalSince1970: -0.5), fractionDigits: 1) == "1969-12-31T23:59:59.5Z")
        #expect(RFC3339.string(from: Date(timeIntervalSince1970: base + 0.7), fractionDigits: 0) == "2024-05-01T06:00:01Z")
        #expect(RFC3339.string(from: Date(timeIntervalSince1970: .nan), fractionDigits: 3) == "1970-01-01T00:00:00.000Z")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let date = Date(timeIntervalSince1970: Double.random(in: -2e9...4e9, using: &generator))
            let text = RFC3339.string(from: date, fractionDigits: 3)
            #expect(text.utf8.count == 24, "\(text)")
            let back = RFC3339.parse(text)?.date ?? .distantPast
            #expect(abs(back.timeIntervalSince(date)) <= 0.0005 + 1e-6, "\(text)")
        }
    }

    @Test("no time is written with a wrapped year: rounding stops at 9999-12-31T23:59:59, and an offset that leaves years 0000–9999 in UTC is refused")
    func yearsStayWithinFourDigits() {
        let last = Date(timeIntervalSince1970: 253_402_300_799.9996)
        #expect(RFC3339.string(from: last, fractionDigits: 3) == "9999-12-31T23:59:59.999Z")
        #expect(RFC3339.string(from: last, fractionDigits: 0) == "9999-12-31T23:59:59Z")
        #expect(RFC3339.parse("9999-12-31T23:00:00-01:00") == nil)
        #expect(RFC3339.parse("0000-01-01T00:00:00+01:00") == nil)
        #expect(RFC3339.parse("9999-12-31T23:59:59+00:00")?.date == Date(timeIntervalSince1970: 253_402_300_799))
        #expect(RFC3339.parse("0000-01-01T00:00:00Z")?.date == Date(timeIntervalSince1970: -62_167_219_200))
    }

    @Test("seconds since 1970 read back to exactly the same Date, also before 1970; other numbers as doubles")
    func exactSeconds() throws {
        func seconds(_ date: Date) -> String {
            var bytes: [UInt8] = []
            RFC3339.appendSeconds(date, to: &bytes)
            return String(decoding: bytes, as: UTF8.self)
        }
        func parse(_ text: String) -> Date? {
            Array(text.utf8).withUnsafeBufferPointer { RFC3339.parseSeconds($0) }
        }
        #expect(seconds(Date(timeIntervalSince1970: 1_714_543_200)) == "1714543200")
        #expect(seconds(Date(timeIntervalSince1970: 1_714_543_200.25)) == "1714543200.25")
        #expect(seconds(Date(timeIntervalSince1970: -1.25)) == "-1.25")
        #expect(parse("-1.25") == Date(timeIntervalSince1970: -1.25))
        #expect(parse("1.7145432e9") == Date(timeIntervalSince1970: 1_714_543_200))
        for bad in ["", "-", ".5", "1.", "nan", "inf", "1e300", "-1e300", "99999999999999", "12a", "1.2.3"] {
            #expect(parse(bad) == nil, "\(bad)")
        }
        var generator = SystemRandomNumberGenerator()
        for digits in 0...7 {
            for _ in 0..<300 {
                let scale = pow(10.0, Double(digits))
                let fraction = Double(Int.random(in: 0..<Int(scale), using: &generator)) / scale
                let whole = Double(Int.random(in: -2_000_000_000...4_000_000_000, using: &generator))
                let date = Date(timeIntervalSinceReferenceDate: whole - 978_307_200 + fraction)
                #expect(parse(seconds(date)) == date, "\(seconds(date))")
            }
        }
        for _ in 0..<2000 {
            let date = Date(timeIntervalSince1970: Double.random(in: -2e9...4e9, using: &generator))
            let back = try #require(parse(seconds(date)))
            #expect(abs(back.timeIntervalSince(date)) <= 1e-9)
        }
    }

    @Test("a time of day says whether it falls on the given UTC day, with fixed fractional digits")
    func timeOfDay() {
        let date = Date(timeIntervalSince1970: 1_714_543_200.25)
        #expect(RFC3339.timeOfDay(date, fractionDigits: 1, sameDayAs: date.addingTimeInterval(3600)) == ("06:00:00.3", true, "2024-05-01"))
        #expect(RFC3339.timeOfDay(date, fractionDigits: 1, sameDayAs: date.addingTimeInterval(-7 * 3600)) == ("06:00:00.3", false, "2024-05-01"))
        // The day is that of the rounded time: 23:59:59.96 shown as 00:00:00.0 is the next day's, and
        // 23:59:59.5 the same day's.
        let late = Date(timeIntervalSince1970: 1_714_607_999.96)
        #expect(RFC3339.timeOfDay(late, fractionDigits: 1, sameDayAs: date) == ("00:00:00.0", false, "2024-05-02"))
        let half = Date(timeIntervalSince1970: 1_714_607_999.5)
        #expect(RFC3339.timeOfDay(half, fractionDigits: 1, sameDayAs: date) == ("23:59:59.5", true, "2024-05-01"))
        #expect(RFC3339.timeOfDay(Date(timeIntervalSince1970: -0.5), fractionDigits: 1, sameDayAs: date).day == "1969-12-31")
        #expect(RFC3339.timeOfDay(date, fractionDigits: 0, sameDayAs: Date(timeIntervalSince1970: .nan)).isSameDay == false)
    }
}
