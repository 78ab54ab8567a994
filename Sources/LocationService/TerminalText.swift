/// Text from elsewhere (the daemon, a file, a receiver) made safe to print on a terminal.
package enum TerminalText {
    /// `text` with every control character (C0, DEL and C1, newlines included) written as `\u{…}`, so
    /// that nothing it holds can move the cursor, clear the screen or forge another line of output.
    package static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var result = ""
        result.unicodeScalars.reserveCapacity(text.unicodeScalars.count)
        for scalar in text.unicodeScalars {
            if isControl(scalar) {
                result += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }
}
