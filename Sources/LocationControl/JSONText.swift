/// Small JSON writers for the fixed parts of replies, so common replies need no encoder.
package enum JSONText {
    /// A JSON string literal, quoted and escaped.
    package static func string(_ value: String) -> String {
        var out = "\""
        out.reserveCapacity(value.utf8.count + 2)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default:
                out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
        return out
    }

    /// A JSON number; integral values are written without a fraction, non-finite ones as `null`.
    static func number(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    /// `{"ok":false,"error":{"code":…,"message":…}}` followed by `\n`.
    static func failureLine(code: String, message: String) -> [UInt8] {
        Array("{\"ok\":false,\"error\":{\"code\":\(string(code)),\"message\":\(string(message))}}\n".utf8)
    }

    /// `{"type":"error","code":…,"message":…}` followed by `\n`: an error event for watchers.
    static func errorEventLine(code: String, message: String) -> [UInt8] {
        Array("{\"type\":\"error\",\"code\":\(string(code)),\"message\":\(string(message))}\n".utf8)
    }
}
