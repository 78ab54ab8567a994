/// Base64 (RFC 4648, the standard alphabet, padded) over bytes, for a held batch's journal records on the
/// wire: megabytes at a time, so without a `String` or `Data` in between.
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Each byte's value in the alphabet, or 0xFF for a byte outside it.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(value) }
        return table
    }()

    /// Appends the base64 text of `data`.
    static func append(_ data: [UInt8], to bytes: inout [UInt8]) {
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: (data.count + 2) / 3 * 4))
        data.withUnsafeBufferPointer { input in
            bytes.withUnsafeMutableBufferPointer { all in
                alphabet.withUnsafeBufferPointer { alphabet in
                    var out = start
                    var index = 0
                    while index + 3 <= input.count {
                        let value = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
                        all[out] = alphabet[Int(value >> 18)]
                        all[out + 1] = alphabet[Int(value >> 12 & 63)]
                        all[out + 2] = alphabet[Int(value >> 6 & 63)]
                        all[out + 3] = alphabet[Int(value & 63)]
                        index += 3
                        out += 4
                    }
                    let left = input.count - index
                    guard left > 0 else { return }
                    let value = UInt32(input[index]) << 16 | (left == 2 ? UInt32(input[index + 1]) << 8 : 0)
                    all[out] = alphabet[Int(value >> 18)]
                    all[out + 1] = alphabet[Int(value >> 12 & 63)]
                    all[out + 2] = left == 2 ? alphabet[Int(value >> 6 & 63)] : UInt8(ascii: "=")
                    all[out + 3] = UInt8(ascii: "=")
                }
            }
        }
    }

    /// The bytes `text` encodes, or `nil` when it is not padded base64 of the standard alphabet (a length
    /// that is not a multiple of 4, a byte outside the alphabet, padding anywhere but at the end, or bits
    /// left over in the last group, so that each byte string has one encoding only).
    static func decode(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard text.count % 4 == 0 else { return nil }
        guard !text.isEmpty else { return [] }
        let padding = text[text.count - 1] == UInt8(ascii: "=") ? (text[text.count - 2] == UInt8(ascii: "=") ? 2 : 1) : 0
        let whole = text.count - (padding > 0 ? 4 : 0)
        var valid = true
        var output = [UInt8](unsafeUninitializedCapacity: whole / 4 * 3) { buffer, count in
            values.withUnsafeBufferPointer { table in
                var index = 0
                var out = 0
                while index < whole {
                    let a = table[Int(text[index])], b = table[Int(text[index + 1])]
                    let c = table[Int(text[index + 2])], d = table[Int(text[index + 3])]
                    guard a | b | c | d < 64 else {
                        valid = false
                        break
                    }
                    let value = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    buffer[out] = UInt8(truncatingIfNeeded: value >> 16)
                    buffer[out + 1] = UInt8(truncatingIfNeeded: value >> 8)
                    buffer[out + 2] = UInt8(truncatingIfNeeded: value)
                    index += 4
                    out += 3
                }
                count = out
            }
        }
        guard valid else { return nil }
        return values.withUnsafeBufferPointer { table -> [UInt8]? in
            guard padding > 0 else { return output }
            let index = whole
            let a = table[Int(text[index])], b = table[Int(text[index + 1])]
            let c = padding == 2 ? 0 : table[Int(text[index + 2])]
            guard a | b | c < 64 else { return nil }
            let value = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6
            // Bits the padding says are not there must be zero.
            guard value & (padding == 2 ? 0xFFFF : 0xFF) == 0 else { return nil }
            output.append(UInt8(truncatingIfNeeded: value >> 16))
            if padding == 1 { output.append(UInt8(truncatingIfNeeded: value >> 8)) }
            return output
        }
    }
}
