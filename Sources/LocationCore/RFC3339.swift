import Foundation

/// A fast, allocation-free RFC 3339 / ISO 8601 date-time parser and formatter.
///
/// Parsing accepts what real GPS files and streams contain: `2024-05-01T06:00:00Z`, fractions of
/// 1–9 digits (`…26.000Z`, `…53.7176739Z`), numeric offsets (`+01:00`, `+0100`, `-05`), a space or a
/// lowercase `t` instead of `T`, and zone-less times, which are read as UTC and reported through
/// ``Parsed/hasZone``. A leap second (`:60`) is accepted and counts as the first second of the next
/// minute. Formatting always writes UTC with `Z` and the fewest fractional digits (0–9) that parse
/// back to exactly the same `Date`.
package enum RFC3339 {
    /// The result of parsing a date-time.
    package struct Parsed: Sendable, Hashable {
        /// The instant, in UTC.
        package var date: Date
        /// `false` when the text carried no zone designator and was read as UTC.
        package var hasZone: Bool
    }

    /// Parses a date-time string; returns `nil` when it is not a valid date-time.
    package static func parse(_ text: String) -> Parsed? {
        var text = text
        return text.withUTF8 { parse($0) }
    }

    /// Parses a date-time from UTF-8 bytes (surrounding ASCII whitespace is ignored).
    package static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Parsed? {
        var start = 0, end = bytes.count
        while start < end, isSpace(bytes[start]) { start += 1 }
        while end > start, isSpace(bytes[end - 1]) { end -= 1 }
        var i = start

        func digits(_ count: Int) -> Int? {
            guard end - i >= count else { return nil }
            var value = 0
            for _ in 0..<count {
                let d = Int(bytes[i]) &- 48
                guard d >= 0, d <= 9 else { return nil }
                value = value * 10 + d
                i += 1
            }
            return value
        }
        func expect(_ byte: UInt8) -> Bool {
            guard i < end, bytes[i] == byte else { return false }
            i += 1
            return true
        }

        guard let year = digits(4), expect(0x2D), let month = digits(2), expect(0x2D), let day = digits(2)
        else { return nil }
        guard i < end, bytes[i] == 0x54 || bytes[i] == 0x74 || bytes[i] == 0x20 else { return nil }
        i += 1
        guard let hour = digits(2), expect(0x3A), let minute = digits(2), expect(0x3A), let second = digits(2)
        else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year),
            hour <= 23, minute <= 59, second <= 60
        else { return nil }

        var fraction = 0
        var fractionDigits = 0
        if i < end, bytes[i] == 0x2E || bytes[i] == 0x2C {
            i += 1
            while i < end, let d = digitValue(bytes[i]) {
                // Digits beyond nanoseconds cannot change a Date; they are read and ignored.
                if fractionDigits < 9 {
                    fraction = fraction * 10 + d
                    fractionDigits += 1
                }
                i += 1
            }
            guard fractionDigits > 0 else { return nil }
        }

        var offsetSeconds = 0
        var hasZone = false
        if i < end {
            switch bytes[i] {
            case 0x5A, 0x7A:  // Z z
                i += 1
                hasZone = true
            case 0x2B, 0x2D:  // + -
                let sign = bytes[i] == 0x2D ? -1 : 1
                i += 1
                guard let offsetHours = digits(2), offsetHours <= 23 else { return nil }
                var offsetMinutes = 0
                if i < end {
                    _ = expect(0x3A)
                    guard let minutes = digits(2), minutes <= 59 else { return nil }
                    offsetMinutes = minutes
                }
                offsetSeconds = sign * (offsetHours * 3600 + offsetMinutes * 60)
                hasZone = true
            default:
                return nil
            }
        }
        guard i == end else { return nil }

        let days = daysFromCivil(year: year, month: month, day: day)
        let wholeSeconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        // An offset can move 9999-12-31T23:00:00-01:00 into year 10000 (or year 0000 into −1) in UTC, which
        // no four-digit UTC time can be written as.
        guard wholeSeconds >= firstSecond, wholeSeconds <= lastSecond else { return nil }
        let date = makeDate(wholeSecondsSince1970: wholeSeconds, fraction: fraction, digits: fractionDigits)
        return Parsed(date: date, hasZone: hasZone)
    }

    /// Formats a date as RFC 3339 UTC with `Z`, using the fewest fractional digits that round-trip.
    package static func string(from date: Date) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        append(date, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the RFC 3339 UTC form of a date to a byte buffer (for writers on a hot path).
    package static func append(_ date: Date, to bytes: inout [UInt8]) {
        let exact = exactParts(of: date)
        appendDateTime(wholeSince1970: exact.whole, to: &bytes)
        if exact.digits > 0 {
            bytes.append(0x2E)
            // Trailing zeros never occur: a shorter form would have round-tripped first.
            appendDigits(exact.fraction, count: exact.digits, to: &bytes)
        }
        bytes.append(0x5A)
    }

    /// Formats a date as RFC 3339 UTC with exactly `fractionDigits` (0–9) fractional digits, rounded to the
    /// nearest: for people and scripts that want every time the same width. It reads back within half a
    /// unit of its last digit, not exactly; ``appendSeconds(_:to:)`` is exact.
    package static func string(from date: Date, fractionDigits: Int) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        append(date, fractionDigits: fractionDigits, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends a date as RFC 3339 UTC with exactly `fractionDigits` (0–9) fractional digits, rounded.
    package static func append(_ date: Date, fractionDigits: Int, to bytes: inout [UInt8]) {
        let digits = min(9, max(0, fractionDigits))
        let (whole, fraction) = rounded(date, digits: digits)
        appendDateTime(wholeSince1970: whole, to: &bytes)
        if digits > 0 {
            bytes.append(0x2E)
            appendDigits(fraction, count: digits, to: &bytes)
        }
        bytes.append(0x5A)
    }

    /// A date's time of day, `HH:MM:SS` with exactly `fractionDigits` (0–9) fractional digits, rounded, whether
    /// it falls on the same UTC day as `today` (terminal lines leave out the date of today's fixes), and its
    /// day, `YYYY-MM-DD`, of the same rounded second.
    package static func timeOfDay(_ date: Date, fractionDigits: Int, sameDayAs today: Date) -> (text: String, isSameDay: Bool, day: String) {
        let digits = min(9, max(0, fractionDigits))
        let (whole, fraction) = rounded(date, digits: digits)
        // One `YYYY-MM-DDTHH:MM:SS` of the rounded second gives both the day and the time: 23:59:59.96 shown as
        // 00:00:00.0 is the next day's.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(30)
        appendDateTime(wholeSince1970: whole, to: &bytes)
        if digits > 0 {
            bytes.append(0x2E)
            appendDigits(fraction, count: digits, to: &bytes)
        }
        let todaySince1970 = today.timeIntervalSince1970
        let sameDay = todaySince1970.isFinite && abs(todaySince1970) < 1e15
            && floorDiv(Int(todaySince1970.rounded(.down)), 86_400) == floorDiv(whole, 86_400)
        return (String(decoding: bytes[11...], as: UTF8.self), sameDay, String(decoding: bytes[..<10], as: UTF8.self))
    }

    /// Appends a date as seconds since 1970-01-01T00:00:00Z, a JSON number with the fewest fractional digits
    /// that ``parseSeconds(_:)`` reads back to exactly the same `Date` (the digits of ``append(_:to:)``).
    package static func appendSeconds(_ date: Date, to bytes: inout [UInt8]) {
        let exact = exactParts(of: date)
        guard exact.whole < 0, exact.digits > 0 else {
            bytes.append(contentsOf: String(exact.whole).utf8)
            if exact.digits > 0 {
                bytes.append(0x2E)
                appendDigits(exact.fraction, count: exact.digits, to: &bytes)
            }
            return
        }
        // Before 1970 the parts are the second below and a fraction counted up from it: -2 + 0.75 is -1.25.
        bytes.append(0x2D)
        bytes.append(contentsOf: String(-(exact.whole + 1)).utf8)
        bytes.append(0x2E)
        appendDigits(Int(powersOfTen[exact.digits]) - exact.fraction, count: exact.digits, to: &bytes)
    }

    /// Reads seconds since 1970 written by ``appendSeconds(_:to:)`` exactly, from the digits (not through a
    /// `Double`); other JSON numbers (an exponent, more than nine fractional digits) are read as a `Double`.
    /// `nil` for anything that is not a finite number within the years 0000–9999 that ``parse(_:)-(String)`` takes.
    package static func parseSeconds(_ bytes: UnsafeBufferPointer<UInt8>) -> Date? {
        var i = 0
        let negative = i < bytes.count && bytes[i] == 0x2D
        if negative { i += 1 }
        var whole = 0
        var wholeDigits = 0
        while i < bytes.count, let d = digitValue(bytes[i]), wholeDigits < 12 {
            whole = whole * 10 + d
            wholeDigits += 1
            i += 1
        }
        var fraction = 0
        var fractionDigits = 0
        var plain = wholeDigits > 0
        if plain, i < bytes.count, bytes[i] == 0x2E {
            i += 1
            while i < bytes.count, let d = digitValue(bytes[i]), fractionDigits < 9 {
                fraction = fraction * 10 + d
                fractionDigits += 1
                i += 1
            }
            plain = fractionDigits > 0
        }
        let seconds: Date
        if plain, i == bytes.count {
            if negative {
                // -12.25 is -13 + 0.75: the fraction is counted up from the whole second below.
                let scale = Int(powersOfTen[fractionDigits])
                seconds = fraction == 0
                    ? makeDate(wholeSecondsSince1970: -whole, fraction: 0, digits: 0)
                    : makeDate(wholeSecondsSince1970: -whole - 1, fraction: scale - fraction, digits: fractionDigits)
            } else {
                seconds = makeDate(wholeSecondsSince1970: whole, fraction: fraction, digits: fractionDigits)
            }
        } else {
            guard isJSONNumber(bytes), let value = Double(String(decoding: bytes, as: UTF8.self)), value.isFinite
            else { return nil }
            seconds = Date(timeIntervalSince1970: value)
        }
        let since1970 = seconds.timeIntervalSince1970
        guard since1970 >= Double(firstSecond), since1970 < Double(lastSecond + 1) else { return nil }
        return seconds
    }

    /// Whether the bytes are one JSON number: `-?digits(.digits)?([eE][+-]?digits)?`.
    private static func isJSONNumber(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var i = 0
        func run() -> Bool {
            let start = i
            while i < bytes.count, digitValue(bytes[i]) != nil { i += 1 }
            return i > start
        }
        if i < bytes.count, bytes[i] == 0x2D { i += 1 }
        guard run() else { return false }
        if i < bytes.count, bytes[i] == 0x2E {
            i += 1
            guard run() else { return false }
        }
        if i < bytes.count, bytes[i] == 0x65 || bytes[i] == 0x45 {
            i += 1
            if i < bytes.count, bytes[i] == 0x2B || bytes[i] == 0x2D { i += 1 }
            guard run() else { return false }
        }
        return i == bytes.count
    }

    /// The whole seconds since 1970 and the shortest fraction (0–9 digits) that read back exactly.
    private static func exactParts(of date: Date) -> (whole: Int, fraction: Int, digits: Int) {
        let sinceReference = date.timeIntervalSinceReferenceDate
        guard sinceReference.isFinite, abs(sinceReference) < 1e15 else { return (0, 0, 0) }
        let wholeSinceReference = sinceReference.rounded(.down)
        let remainder = sinceReference - wholeSinceReference
        let whole = Int(wholeSinceReference) + referenceOffset
        // Pick the shortest fraction that the parser turns back into exactly this Date.
        for digitsCount in 0...9 {
            let scaled = (remainder * powersOfTen[digitsCount]).rounded()
            var candidateWhole = whole
            var candidate = Int(scaled)
            if candidate >= Int(powersOfTen[digitsCount]) {
                candidateWhole += 1
                candidate = 0
            }
            if makeDate(wholeSecondsSince1970: candidateWhole, fraction: candidate, digits: digitsCount) == date {
                return (candidateWhole, candidate, digitsCount)
            }
        }
        return (whole, min(999_999_999, Int((remainder * 1e9).rounded())), 9)
    }

    /// The whole seconds since 1970 and the fraction rounded to `digits` digits (a carry moves the second).
    private static func rounded(_ date: Date, digits: Int) -> (whole: Int, fraction: Int) {
        let sinceReference = date.timeIntervalSinceReferenceDate
        guard sinceReference.isFinite, abs(sinceReference) < 1e15 else { return (0, 0) }
        let wholeSinceReference = sinceReference.rounded(.down)
        var whole = Int(wholeSinceReference) + referenceOffset
        let scale = Int(powersOfTen[digits])
        var fraction = Int(((sinceReference - wholeSinceReference) * powersOfTen[digits]).rounded())
        if fraction >= scale {
            if whole >= lastSecond {
                // Rounding up would write year 10000, which four digits cannot hold: the last unit instead.
                fraction = scale - 1
            } else {
                whole += 1
                fraction -= scale
            }
        }
        return (whole, fraction)
    }

    /// `YYYY-MM-DDTHH:MM:SS` of whole seconds since 1970.
    private static func appendDateTime(wholeSince1970 whole: Int, to bytes: inout [UInt8]) {
        let days = floorDiv(whole, 86_400)
        let secondsOfDay = whole - days * 86_400
        let (year, month, day) = civilFromDays(days)
        appendDigits(year, count: 4, to: &bytes)
        bytes.append(0x2D)
        appendDigits(month, count: 2, to: &bytes)
        bytes.append(0x2D)
        appendDigits(day, count: 2, to: &bytes)
        bytes.append(0x54)
        appendDigits(secondsOfDay / 3600, count: 2, to: &bytes)
        bytes.append(0x3A)
        appendDigits(secondsOfDay / 60 % 60, count: 2, to: &bytes)
        bytes.append(0x3A)
        appendDigits(secondsOfDay % 60, count: 2, to: &bytes)
    }

    private static func floorDiv(_ value: Int, _ divisor: Int) -> Int {
        let quotient = value / divisor
        return value % divisor < 0 ? quotient - 1 : quotient
    }

    // MARK: - Calendar arithmetic (proleptic Gregorian, after H. Hinnant's civil algorithms)

    private static let referenceOffset = 978_307_200  // seconds from 1970-01-01 to 2001-01-01
    /// 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z in seconds since 1970: the instants four-digit years hold.
    private static let firstSecond = -62_167_219_200
    private static let lastSecond = 253_402_300_799
    private static let powersOfTen: [Double] = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9]

    private static func makeDate(wholeSecondsSince1970: Int, fraction: Int, digits: Int) -> Date {
        let whole = Double(wholeSecondsSince1970 - referenceOffset)
        return Date(timeIntervalSinceReferenceDate: whole + Double(fraction) / powersOfTen[digits])
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private static func digitValue(_ byte: UInt8) -> Int? {
        byte >= 0x30 && byte <= 0x39 ? Int(byte - 0x30) : nil
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civilFromDays(_ days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func appendDigits(_ value: Int, count: Int, to bytes: inout [UInt8]) {
        var divisor = 1
        for _ in 1..<count { divisor *= 10 }
        var value = max(0, value)
        while divisor > 0 {
            bytes.append(UInt8(truncatingIfNeeded: 0x30 + (value / divisor) % 10))
            value %= divisor
            divisor /= 10
        }
    }
}
