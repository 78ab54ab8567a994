/// The small pieces of SVG text the renderer writes, by hand and into a byte buffer, because a million
/// points go through here.
package enum SVGText {
    /// Appends a pixel coordinate with at most one decimal ("12.3", "-4", "0.5").
    package static func appendNumber(_ value: Double, to bytes: inout [UInt8]) {
        guard value.isFinite else {
            bytes.append(UInt8(ascii: "0"))
            return
        }
        var tenths = Int((min(max(value, -1e12), 1e12) * 10).rounded())
        if tenths < 0 {
            bytes.append(UInt8(ascii: "-"))
            tenths = -tenths
        }
        appendInteger(tenths / 10, to: &bytes)
        if tenths % 10 != 0 {
            bytes.append(UInt8(ascii: "."))
            bytes.append(UInt8(ascii: "0") + UInt8(tenths % 10))
        }
    }

    private static func appendInteger(_ value: Int, to bytes: inout [UInt8]) {
        if value >= 10 { appendInteger(value / 10, to: &bytes) }
        bytes.append(UInt8(ascii: "0") + UInt8(value % 10))
    }

    /// A number as text, for attributes built with string interpolation.
    package static func number(_ value: Double) -> String {
        var bytes: [UInt8] = []
        appendNumber(value, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Text made safe inside an XML element or attribute; control characters (which XML 1.0 forbids)
    /// become U+FFFD.
    package static func escaped(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&apos;"
            case "\t", "\n", "\r": result += " "
            default:
                if scalar.value < 0x20 || (0xFFFE...0xFFFF).contains(scalar.value) || (0x7F...0x9F).contains(scalar.value) {
                    result.unicodeScalars.append("\u{FFFD}")
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result
    }
}
