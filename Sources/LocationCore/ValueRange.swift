/// The documented range of a number a person gives (a flag, an environment variable, a configuration key,
/// a lifecycle script, a field of a file), and the one checked conversion from that number to a `Double`
/// or a `Duration`.
///
/// Every surface that takes a duration or a rate goes through a `ValueRange`, so a value that is not a
/// number, is infinite, negative or outside the range is refused with one line naming the place, the value
/// as written and the range, and no conversion can trap:
///
/// ```swift
/// let interval = try ValueRange.backgroundInterval.duration(parsing: "1e300", for: "--reduced-interval")
/// // throws: --reduced-interval: 1e300 is above the largest allowed value; use 0.1…604800 s
/// ```
package struct ValueRange: Sendable, Hashable, CustomStringConvertible {
    /// The smallest allowed value.
    package var lowerBound: Double
    /// The largest allowed value.
    package var upperBound: Double
    /// The unit printed after the range, such as `s` or `m/s`.
    package var unit: String

    /// Creates a range of allowed values (both bounds included) with the unit they are given in.
    package init(_ bounds: ClosedRange<Double>, unit: String) {
        precondition(bounds.lowerBound.isFinite && bounds.upperBound.isFinite, "a value range has finite bounds")
        lowerBound = bounds.lowerBound
        upperBound = bounds.upperBound
        self.unit = unit
    }

    /// The range as a person reads it, such as `0.001…3600 s`.
    package var description: String {
        "\(Self.text(lowerBound))…\(Self.text(upperBound))" + (unit.isEmpty ? "" : " \(unit)")
    }

    /// Checks `value` against the range.
    ///
    /// - Parameters:
    ///   - value: The number as given.
    ///   - name: Where it came from, such as `--speed`, `reduced.interval` or `ride.gpx:12`.
    ///   - written: The value as the person wrote it, when it was text (the message quotes it).
    ///   - code: The error's code: ``LocationError/Code/invalidConfiguration`` for options and configuration,
    ///     ``LocationError/Code/invalidData`` for data.
    /// - Throws: A ``LocationError`` naming the place, the value and the range.
    package func value(
        _ value: Double, for name: String, written: String? = nil, code: LocationError.Code = .invalidConfiguration
    ) throws(LocationError) -> Double {
        let shown = written ?? Self.text(value)
        func refuse(_ reason: String) -> LocationError {
            LocationError(code, "\(name): \(shown) \(reason); use \(description)")
        }
        if value.isNaN { throw refuse("is not a number") }
        if value.isInfinite { throw refuse(value < 0 ? "is negative infinity" : "is infinite") }
        if value < 0, lowerBound >= 0 { throw refuse("is negative") }
        if value == 0, lowerBound > 0 { throw refuse("is zero") }
        if value < lowerBound { throw refuse("is below the smallest allowed value") }
        if value > upperBound { throw refuse("is above the largest allowed value") }
        return value
    }

    /// Parses `text` (surrounding spaces ignored) and checks it against the range.
    ///
    /// - Throws: A ``LocationError`` naming the place when the text is not a number or is out of range.
    package func value(
        parsing text: String, for name: String, code: LocationError.Code = .invalidConfiguration
    ) throws(LocationError) -> Double {
        let trimmed = text.trimmingSpaces
        guard let number = Self.number(trimmed) else {
            throw LocationError(code, "\(name): '\(Self.printable(text))' is not a number; use \(description)")
        }
        return try value(number, for: name, written: Self.printable(trimmed), code: code)
    }

    /// Checks a number of seconds against the range and returns it as a `Duration`.
    ///
    /// - Throws: A ``LocationError`` naming the place, the value and the range.
    package func duration(
        seconds: Double, for name: String, written: String? = nil, code: LocationError.Code = .invalidConfiguration
    ) throws(LocationError) -> Duration {
        Self.duration(clampingSeconds: try value(seconds, for: name, written: written, code: code))
    }

    /// Parses a number of seconds, checks it against the range and returns it as a `Duration`.
    ///
    /// - Throws: A ``LocationError`` naming the place when the text is not a number or is out of range.
    package func duration(
        parsing text: String, for name: String, code: LocationError.Code = .invalidConfiguration
    ) throws(LocationError) -> Duration {
        Self.duration(clampingSeconds: try value(parsing: text, for: name, code: code))
    }

    /// The longest duration ``duration(clampingSeconds:)`` returns: about 31.7 million years, far beyond any
    /// clock this library sleeps on, and far inside what `Duration` can hold.
    package static let longestDuration: Duration = .seconds(1_000_000_000_000_000)

    /// Converts seconds to a `Duration` without ever trapping: NaN becomes zero, and values beyond
    /// ±``longestDuration`` are clamped to it.
    package static func duration(clampingSeconds seconds: Double) -> Duration {
        guard !seconds.isNaN else { return .zero }
        let limit = 1e15
        if seconds >= limit { return longestDuration }
        if seconds <= -limit { return .zero - longestDuration }
        let whole = seconds.rounded(.towardZero)
        let attoseconds = ((seconds - whole) * 1e18).rounded()
        return .seconds(Int64(whole)) + Duration(secondsComponent: 0, attosecondsComponent: Int64(attoseconds))
    }

    // MARK: - Ranges of the service

    /// Seconds before the first reconnection to gpsd, and the longest delay between reconnections.
    package static let reconnectDelay = ValueRange(0.001...3600, unit: "s")
    /// Seconds without any message from gpsd before the connection is reopened.
    package static let watchdog = ValueRange(0.1...86_400, unit: "s")
    /// Seconds an epoch is held for more of its reports while the receiver's pattern is unknown.
    package static let epochSettle = ValueRange(0.001...10, unit: "s")
    /// Seconds between background acquisitions (up to a week).
    package static let backgroundInterval = ValueRange(0.1...604_800, unit: "s")
    /// Seconds one background acquisition may take.
    package static let acquisitionTimeout = ValueRange(0.1...86_400, unit: "s")
    /// Seconds of the lifecycle's didEnterBackground budget and of its background-task time limit.
    package static let lifecycleTime = ValueRange(0.001...86_400, unit: "s")
    /// Seconds a control client with pending output may go without reading.
    package static let stallTimeout = ValueRange(0.1...86_400, unit: "s")
    /// Seconds to wait for one position (the control protocol's `current` allows the same).
    package static let positionTimeout = ValueRange(0.001...86_400, unit: "s")
    /// Seconds a `current` request on the control socket may wait (0 answers with the last fix at once).
    package static let requestTimeout = ValueRange(0...86_400, unit: "s")
    /// The oldest a cached fix may be to answer a one-shot request (`current --max-age`; 0 never takes one).
    package static let maximumAge = ValueRange(0...86_400, unit: "s")
    /// Seconds a watch may run (about 31.7 years).
    package static let watchDuration = ValueRange(0.001...1_000_000_000, unit: "s")
    /// A gap in fix time that starts a new GPX segment (`--split-gap`).
    package static let splitGap = ValueRange(0.001...1_000_000_000, unit: "s")
    /// Seconds of track time: replay gap lengths and lifecycle script times. The widest span GPX times can
    /// have (year 0001 to 9999) is about 3.2 × 10¹¹ s.
    package static let trackTime = ValueRange(0...1_000_000_000_000, unit: "s")
    /// How many times faster than recorded a replay plays.
    package static let speedFactor = ValueRange(0.001...1_000_000, unit: "×")
    /// A speed in metres per second (the speed assumed along points without times).
    package static let speed = ValueRange(0.001...1_000_000, unit: "m/s")
    /// A distance or an accuracy in metres (up to the Earth's circumference).
    package static let distance = ValueRange(0.001...40_000_000, unit: "m")
    /// How many fixes a held batch may keep.
    package static let batchCapacity = ValueRange(1...100_000_000, unit: "fixes")
    /// App sessions one daemon keeps.
    package static let appCount = ValueRange(1...10_000, unit: "apps")
    /// Seconds an abandoned app's session is kept (up to a year).
    package static let abandonedRetention = ValueRange(1...31_536_000, unit: "s")
    /// Bytes of output a daemon may hold for its clients together (64 KiB to 4 GiB).
    package static let bufferedOutput = ValueRange(65_536...4_294_967_296, unit: "bytes")
    /// A TCP port.
    package static let port = ValueRange(1...65_535, unit: "")

    // MARK: - Text

    /// Parses a decimal or exponent number, or `nan`/`inf` (so that they are refused by name, not as junk).
    private static func number(_ text: Substring) -> Double? {
        text.isEmpty ? nil : Double(text)
    }

    /// A number as messages show it: the shortest text that round-trips, without a trailing `.0` on whole
    /// numbers, and `nan`, `inf` or `-inf`.
    package static func text(_ value: Double) -> String {
        if value.isNaN { return "nan" }
        if value.isInfinite { return value < 0 ? "-inf" : "inf" }
        if value == value.rounded(), abs(value) < 1e16 { return String(Int64(value)) }
        // Swift writes 1e+300; people write 1e300.
        return String(String(value).split(separator: "+", omittingEmptySubsequences: false).joined())
    }

    /// `text` with control characters and the invisible ones that reorder or break a line (U+202E, U+2028)
    /// escaped, and cut to `limit` characters, so that a message quoting what a person wrote stays one
    /// readable line.
    package static func printable(_ text: some StringProtocol, limit: Int = 80) -> String {
        var result = ""
        for scalar in text.unicodeScalars.prefix(limit) {
            if CircularRegion.isHidden(scalar) {
                result += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return text.unicodeScalars.count > limit ? result + "…" : result
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    fileprivate var trimmingSpaces: Substring {
        let characters = Substring(self)
        let start = characters.firstIndex { $0 != " " && $0 != "\t" } ?? characters.endIndex
        let end = characters.lastIndex { $0 != " " && $0 != "\t" }.map { characters.index(after: $0) } ?? start
        return characters[start..<Swift.max(start, end)]
    }
}
