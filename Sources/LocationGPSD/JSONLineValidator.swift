/// Checks that one line from gpsd is exactly one well-formed JSON object (RFC 8259), before libgps sees it.
///
/// libgps's own parser is lenient in ways that corrupt fixes: it reads `-inf` as `-0`, keeps the values
/// before the cut in a truncated line, normalises an impossible date such as month 13 into a real one,
/// and parses a second object glued to the first. So a line reaches libgps only when it is strict JSON:
/// literals `true`, `false`, `null` only (no `NaN`, no `Infinity`), numbers in JSON's grammar, strings
/// with valid escapes and no raw control characters, nesting at most ``maximumDepth`` deep, and nothing
/// after the closing brace but whitespace. While scanning, it notes where the top-level `class` and
/// `time` strings are, so the caller can check them without a second pass.
package enum JSONLineValidator {
    /// The top-level members the caller needs, as byte ranges of their string contents (without quotes).
    package struct Members: Equatable {
        /// The `class` string's contents.
        package var className: Range<Int>?
        /// The `time` string's contents.
        package var time: Range<Int>?
        /// The top-level `mode` value as written (a number in gpsd's TPV), whatever its type.
        package var mode: Range<Int>?
        /// The first top-level `lat` or `lon` value that is not a JSON number, as written: libgps reads it
        /// as absent, which would turn a TPV into a partial one without a word.
        package var nonNumericCoordinate: Range<Int>?
        /// The top-level `status` value as written (a number in gpsd's TPV), whatever its type.
        package var status: Range<Int>?
        /// Whether the object has a top-level `satellites` member (a SKY's list of satellites in view).
        package var listsSatellites = false
    }

    /// Why a line is not a JSON object.
    package struct Failure: Error, Equatable, CustomStringConvertible {
        /// What is wrong, for a person.
        package var reason: String
        /// The byte offset where the scan stopped.
        package var offset: Int

        package var description: String { reason }
    }

    /// The deepest nesting of objects and arrays accepted; gpsd's own messages nest three levels.
    static let maximumDepth = 32

    /// Scans `bytes` (one line without its newline); returns the top-level members or the first fault.
    package static func validate(_ bytes: UnsafeBufferPointer<UInt8>) -> Result<Members, Failure> {
        var scanner = Scanner(bytes: bytes)
        do throws(Failure) {
            return .success(try scanner.line())
        } catch {
            return .failure(error)
        }
    }

    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0
        var members = Members()

        init(bytes: UnsafeBufferPointer<UInt8>) {
            self.bytes = bytes
        }

        mutating func line() throws(Failure) -> Members {
            skipSpace()
            guard index < bytes.count else { throw Failure(reason: "the line is empty", offset: 0) }
            guard bytes[index] == UInt8(ascii: "{") else {
                throw Failure(reason: "it is not a JSON object", offset: index)
            }
            try value(depth: 0, topLevel: true)
            skipSpace()
            if index < bytes.count {
                throw Failure(reason: "text follows the object at byte \(index + 1)", offset: index)
            }
            return members
        }

        /// Reads one value of any kind.
        mutating func value(depth: Int, topLevel: Bool = false) throws(Failure) {
            guard index < bytes.count else { throw cut() }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                try container(object: true, depth: depth + 1, topLevel: topLevel)
            case UInt8(ascii: "["):
                try container(object: false, depth: depth + 1, topLevel: false)
            case UInt8(ascii: "\""):
                _ = try string()
            case UInt8(ascii: "t"):
                try literal("true")
            case UInt8(ascii: "f"):
                try literal("false")
            case UInt8(ascii: "n"):
                try literal("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                try number()
            default:
                throw unexpected()
            }
        }

        /// Reads an object or an array, the same loop for both: elements separated by commas up to the
        /// closing bracket, each element of an object being a member. Inlined, as is ``member(depth:topLevel:)``,
        /// so each call site is specialised for its kind: otherwise the scan is 25% slower than two loops.
        @inline(__always)
        mutating func container(object: Bool, depth: Int, topLevel: Bool) throws(Failure) {
            guard depth <= JSONLineValidator.maximumDepth else {
                throw Failure(reason: "it nests deeper than \(JSONLineValidator.maximumDepth) levels", offset: index)
            }
            let closing = object ? UInt8(ascii: "}") : UInt8(ascii: "]")
            index += 1
            skipSpace()
            guard index < bytes.count else { throw cut() }
            if bytes[index] == closing {
                index += 1
                return
            }
            while true {
                skipSpace()
                if object {
                    try member(depth: depth, topLevel: topLevel)
                } else {
                    try value(depth: depth)
                }
                skipSpace()
                guard index < bytes.count else { throw cut() }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == closing else { throw unexpected(expecting: object ? "',' or '}'" : "',' or ']'") }
                index += 1
                return
            }
        }

        /// Reads one member of an object: its name, a colon and its value; notes where the top-level
        /// members of interest are.
        @inline(__always)
        mutating func member(depth: Int, topLevel: Bool) throws(Failure) {
            guard index < bytes.count else { throw cut() }
            guard bytes[index] == UInt8(ascii: "\"") else { throw unexpected(expecting: "a member name") }
            let key = try string()
            skipSpace()
            guard index < bytes.count else { throw cut() }
            guard bytes[index] == UInt8(ascii: ":") else { throw unexpected(expecting: "':'") }
            index += 1
            skipSpace()
            guard index < bytes.count else { throw cut() }
            if topLevel, bytes[index] == UInt8(ascii: "\""), let name = memberOfInterest(key) {
                let contents = try string()
                switch name {
                case .className: members.className = contents
                case .time: members.time = contents
                }
            } else if topLevel, matches(key, "mode") {
                let start = index
                try value(depth: depth)
                members.mode = start..<index
            } else if topLevel, matches(key, "status") {
                let start = index
                try value(depth: depth)
                members.status = start..<index
            } else if topLevel, matches(key, "satellites") {
                members.listsSatellites = true
                try value(depth: depth)
            } else if topLevel, matches(key, "lat") || matches(key, "lon") {
                let isNumber = bytes[index] == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index])
                try value(depth: depth)
                if !isNumber, members.nonNumericCoordinate == nil { members.nonNumericCoordinate = key.lowerBound..<index }
            } else {
                try value(depth: depth)
            }
        }

        /// Reads a string; returns the range of its contents (escapes left as they are).
        mutating func string() throws(Failure) -> Range<Int> {
            index += 1
            let start = index
            while index < bytes.count {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""):
                    defer { index += 1 }
                    return start..<index
                case UInt8(ascii: "\\"):
                    index += 1
                    guard index < bytes.count else { throw cut() }
                    switch bytes[index] {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                        UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                        index += 1
                    case UInt8(ascii: "u"):
                        index += 1
                        for _ in 0..<4 {
                            guard index < bytes.count else { throw cut() }
                            guard isHexDigit(bytes[index]) else { throw unexpected(expecting: "a hex digit") }
                            index += 1
                        }
                    default:
                        throw Failure(reason: "bad escape '\\\(printable(bytes[index]))' at byte \(index + 1)", offset: index)
                    }
                case 0..<0x20:
                    throw Failure(reason: "control character 0x\(hex(byte)) inside a string at byte \(index + 1)", offset: index)
                default:
                    index += 1
                }
            }
            throw cut()
        }

        mutating func number() throws(Failure) {
            if bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count else { throw cut() }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
            } else {
                guard isDigit(bytes[index]) else { throw unexpected(expecting: "a digit") }
                while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard index < bytes.count else { throw cut() }
                guard isDigit(bytes[index]) else { throw unexpected(expecting: "a digit") }
                while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                    index += 1
                }
                guard index < bytes.count else { throw cut() }
                guard isDigit(bytes[index]) else { throw unexpected(expecting: "a digit") }
                while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            }
        }

        mutating func literal(_ word: StaticString) throws(Failure) {
            let start = index
            for expected in UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount) {
                guard index < bytes.count else { throw cut() }
                guard bytes[index] == expected else {
                    index = start
                    throw unexpected()
                }
                index += 1
            }
        }

        mutating func skipSpace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0D, 0x0A: index += 1
                default: return
                }
            }
        }

        private enum Interesting { case className, time }

        private func memberOfInterest(_ key: Range<Int>) -> Interesting? {
            if matches(key, "class") { return .className }
            if matches(key, "time") { return .time }
            return nil
        }

        private func matches(_ range: Range<Int>, _ word: StaticString) -> Bool {
            guard range.count == word.utf8CodeUnitCount else { return false }
            for (offset, byte) in UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount).enumerated()
            where bytes[range.lowerBound + offset] != byte {
                return false
            }
            return true
        }

        private func cut() -> Failure {
            Failure(reason: "it ends before the JSON is complete (cut off after \(bytes.count) bytes)", offset: bytes.count)
        }

        private func unexpected(expecting: String? = nil) -> Failure {
            let found = "unexpected '\(printable(bytes[index]))' at byte \(index + 1)"
            return Failure(reason: expecting.map { "\(found), expected \($0)" } ?? found, offset: index)
        }

        private func printable(_ byte: UInt8) -> String {
            byte >= 0x20 && byte < 0x7F ? String(UnicodeScalar(byte)) : "\\x\(hex(byte))"
        }

        private func hex(_ byte: UInt8) -> String {
            let digits = Array("0123456789ABCDEF")
            return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
        }

        private func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

        private func isHexDigit(_ byte: UInt8) -> Bool {
            isDigit(byte) || (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "f"))
        }
    }
}
