import Foundation
import LocationCore
import Testing

@Suite("ValueRange: the one conversion from a person's number")
struct ValueRangeTests {
    @Test(
        "hostile numbers are refused with the place, the value as written and the range",
        arguments: [
            ("0", "--x: 0 is zero; use 0.1…60 s"),
            ("-1", "--x: -1 is negative; use 0.1…60 s"),
            ("nan", "--x: nan is not a number; use 0.1…60 s"),
            ("inf", "--x: inf is infinite; use 0.1…60 s"),
            ("-inf", "--x: -inf is negative infinity; use 0.1…60 s"),
            ("1e-300", "--x: 1e-300 is below the smallest allowed value; use 0.1…60 s"),
            ("1e300", "--x: 1e300 is above the largest allowed value; use 0.1…60 s"),
            ("9.3e18", "--x: 9.3e18 is above the largest allowed value; use 0.1…60 s"),
            ("1" + String(repeating: "0", count: 40), "--x: 1" + String(repeating: "0", count: 40) + " is above the largest allowed value; use 0.1…60 s"),
            ("ten", "--x: 'ten' is not a number; use 0.1…60 s"),
            ("", "--x: '' is not a number; use 0.1…60 s"),
            ("1\u{1B}[2J", "--x: '1\\u{1b}[2J' is not a number; use 0.1…60 s"),
        ])
    func refused(text: String, message: String) {
        let range = ValueRange(0.1...60, unit: "s")
        #expect(throws: LocationError(.invalidConfiguration, message)) { try range.duration(parsing: text, for: "--x") }
    }

    @Test("values inside the range convert exactly, with surrounding spaces ignored")
    func accepted() throws {
        let range = ValueRange(0...1e12, unit: "s")
        #expect(try range.duration(parsing: " 2.5 ", for: "x") == .milliseconds(2500))
        #expect(try range.duration(parsing: "0", for: "x") == .zero)
        #expect(try range.duration(parsing: "1e12", for: "x") == .seconds(1_000_000_000_000))
        #expect(try range.value(parsing: "1e-300", for: "x") == 1e-300)
    }

    @Test("data errors carry the data code")
    func dataCode() {
        #expect(throws: LocationError(.invalidData, "ride.gpx:12: -5 is negative; use 0…100 m")) {
            try ValueRange(0...100, unit: "m").value(-5, for: "ride.gpx:12", code: .invalidData)
        }
    }

    @Test("the clamping conversion never traps: NaN is zero, huge values stop at the longest duration")
    func clamping() {
        #expect(ValueRange.duration(clampingSeconds: .nan) == .zero)
        #expect(ValueRange.duration(clampingSeconds: .infinity) == ValueRange.longestDuration)
        #expect(ValueRange.duration(clampingSeconds: -.infinity) == .zero - ValueRange.longestDuration)
        #expect(ValueRange.duration(clampingSeconds: 1e300) == ValueRange.longestDuration)
        #expect(ValueRange.duration(clampingSeconds: 3.2e11) == .seconds(320_000_000_000))
        #expect(ValueRange.duration(clampingSeconds: -1.5) == .milliseconds(-1500))
    }

    @Test("a duration made from seconds gives back the very number it was made from")
    func secondsRoundTrip() {
        // 1.70040224 once came back as 1.7004022400000003 through a request's timeout.
        var values: [Double] = [1.70040224, 0.1, 0.3, 1.5, 2.675, 86_399.999, 604_800, 0.001, 1e-9, 123_456.789_012]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<20_000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            values.append(Double(state >> 11) / Double(1 << 53) * 86_400)
        }
        var failures = 0
        for value in values {
            let duration = ValueRange.duration(clampingSeconds: value)
            if duration.seconds != value || ValueRange.duration(clampingSeconds: duration.seconds) != duration {
                failures += 1
            }
        }
        #expect(failures == 0)
    }

    @Test("every range of the service has finite bounds that Duration holds")
    func serviceRanges() throws {
        let ranges: [ValueRange] = [
            .reconnectDelay, .watchdog, .backgroundInterval, .acquisitionTimeout, .lifecycleTime, .stallTimeout,
            .positionTimeout, .requestTimeout, .watchDuration, .trackTime, .speedFactor, .speed, .distance, .batchCapacity,
            .port,
        ]
        for range in ranges {
            #expect(range.lowerBound <= range.upperBound)
            #expect(try range.duration(seconds: range.upperBound, for: "x") <= ValueRange.longestDuration)
        }
    }
}
