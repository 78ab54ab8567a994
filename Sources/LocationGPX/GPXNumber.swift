/// Reading and writing the numbers of a GPX file without going through `String` on the hot path.
enum GPXNumber {
    /// Parses a decimal number (`xsd:decimal`, also with an exponent) from bytes; surrounding XML
    /// whitespace is ignored. Returns `nil` for anything else, including `nan`, `inf`, hex and
    /// results that overflow to infinity.
    ///
    /// Up to 19 significant digits with a small exponent take an exact fast path (Clinger); longer
    /// numbers go through the standard library's correctly rounded parser.
    static func parseDouble(_ bytes: UnsafeBufferPointer<UInt8>) -> Double? {
        guard let base = bytes.baseAddress else { return nil }
        var start = 0, end = bytes.count
        while start < end, isSpace(base[start]) { start += 1 }
        while end > start, isSpace(base[end - 1]) { end -= 1 }
        var i = start
        var negative = false
        if i < end, base[i] == 0x2D || base[i] == 0x2B {
            negative = base[i] == 0x2D
            i += 1
        }
        var mantissa: UInt64 = 0
        var significant = 0  // digits in `mantissa`, leading zeros excluded
        var dropped = false  // non-zero digits beyond the 19 kept
        var exponent = 0  // power of ten to apply to `mantissa`
        var digitCount = 0
        while i < end, let d = digit(base[i]) {
            digitCount += 1
            if significant < 19 {
                if mantissa != 0 || d != 0 {
                    mantissa = mantissa &* 10 &+ UInt64(d)
                    significant += 1
                }
            } else {
                exponent += 1
                if d != 0 { dropped = true }
            }
            i += 1
        }
        if i < end, base[i] == 0x2E {
            i += 1
            while i < end, let d = digit(base[i]) {
                digitCount += 1
                if significant < 19 {
                    if mantissa != 0 || d != 0 {
                        mantissa = mantissa &* 10 &+ UInt64(d)
                        significant += 1
                    }
                    exponent -= 1
                } else if d != 0 {
                    dropped = true
                }
                i += 1
            }
        }
        guard digitCount > 0 else { return nil }
        if i < end, base[i] == 0x65 || base[i] == 0x45 {
            i += 1
            var expNegative = false
            if i < end, base[i] == 0x2D || base[i] == 0x2B {
                expNegative = base[i] == 0x2D
                i += 1
            }
            var value = 0
            var expDigits = 0
            while i < end, let d = digit(base[i]) {
                if value < 100_000 { value = value * 10 + d }
                expDigits += 1
                i += 1
            }
            guard expDigits > 0 else { return nil }
            exponent += expNegative ? -value : value
        }
        guard i == end else { return nil }

        if !dropped, mantissa <= 1 << 53, exponent >= -22, exponent <= 22 {
            var value = Double(mantissa)
            if exponent < 0 {
                value /= powersOfTen[-exponent]
            } else if exponent > 0 {
                value *= powersOfTen[exponent]
            }
            return negative ? -value : value
        }
        // Rare: many digits or a large exponent. The text is known to be a plain decimal here.
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        guard let value = Double(text), value.isFinite else { return nil }
        return value
    }

    /// Parses a non-negative decimal integer (`xsd:nonNegativeInteger`), ignoring surrounding whitespace.
    static func parseInt(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let base = bytes.baseAddress else { return nil }
        var start = 0, end = bytes.count
        while start < end, isSpace(base[start]) { start += 1 }
        while end > start, isSpace(base[end - 1]) { end -= 1 }
        if start < end, base[start] == 0x2B { start += 1 }
        guard start < end else { return nil }
        var value = 0
        for i in start..<end {
            guard let d = digit(base[i]) else { return nil }
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(d)
            guard !o1, !o2 else { return nil }
            value = sum
        }
        return value
    }

    /// Whether the bytes hold only XML whitespace.
    static func isBlank(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        bytes.allSatisfy(isSpace)
    }

    @inline(__always) static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    @inline(__always) private static func digit(_ byte: UInt8) -> Int? {
        let d = Int(byte) &- 0x30
        return d >= 0 && d <= 9 ? d : nil
    }

    private static let powersOfTen: [Double] = (0...22).map { exponent in
        var value = 1.0
        for _ in 0..<exponent { value *= 10 }
        return value
    }

    /// Appends a finite `Double` as an `xsd:decimal` (no exponent) with the fewest digits that read
    /// back as exactly the same value; integral values get no fraction (`31`, `-0`).
    static func appendDecimal(_ value: Double, to out: inout [UInt8]) {
        // `description` gives the shortest round-tripping digits, sometimes in exponent form.
        let text = Array(value.description.utf8)
        var digits: [UInt8] = []
        digits.reserveCapacity(24)
        var pointPosition: Int?  // digits before the decimal point
        var exponent = 0
        var negative = false
        var i = 0
        if i < text.count, text[i] == 0x2D {
            negative = true
            i += 1
        }
        while i < text.count {
            let c = text[i]
            if c == 0x2E {
                pointPosition = digits.count
            } else if c == 0x65 || c == 0x45 {
                exponent = Int(String(decoding: text[(i + 1)...], as: UTF8.self)) ?? 0
                break
            } else {
                digits.append(c)
            }
            i += 1
        }
        var integerDigits = (pointPosition ?? digits.count) + exponent
        // Strip leading zeros that only held the place of the point; keep the value's own.
        while digits.count > 1, digits.first == 0x30, integerDigits > 1 {
            digits.removeFirst()
            integerDigits -= 1
        }
        while let last = digits.last, last == 0x30, digits.count > max(integerDigits, 1) {
            digits.removeLast()
        }
        if negative { out.append(0x2D) }
        if integerDigits <= 0 {
            out.append(0x30)
            out.append(0x2E)
            for _ in 0..<(-integerDigits) { out.append(0x30) }
            out.append(contentsOf: digits)
        } else if integerDigits >= digits.count {
            out.append(contentsOf: digits)
            for _ in 0..<(integerDigits - digits.count) { out.append(0x30) }
        } else {
            out.append(contentsOf: digits[0..<integerDigits])
            out.append(0x2E)
            out.append(contentsOf: digits[integerDigits...])
        }
    }

    /// Appends a non-negative integer in decimal.
    static func appendInt(_ value: Int, to out: inout [UInt8]) {
        out.append(contentsOf: String(value).utf8)
    }
}
