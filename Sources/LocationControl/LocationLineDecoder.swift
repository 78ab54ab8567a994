import Foundation
import LocationCore

/// Reads a `location` event line in the shape ``JSONLineEncoder`` writes, without `JSONDecoder`: a held batch
/// is up to 100,000 of them, and two `JSONDecoder` passes a line took seconds for one.
///
/// It is a fast path only: it takes a flat object of the known keys with plain values (numbers, strings
/// without escapes, booleans) and returns `nil` for anything else (an escape, an unknown or repeated key, a
/// value of another type, an impossible coordinate), which the caller then decodes with `JSONDecoder`, so
/// that every line means exactly what it meant before and every error reads the same.
enum LocationLineDecoder {
    private static let prefix = Array(#"{"type":"location","#.utf8)

    /// The location of a line that starts `{"type":"location",`, or `nil` when the fast path does not apply.
    static func location(_ line: [UInt8]) -> Location? {
        guard line.count > prefix.count, line.starts(with: prefix) else { return nil }
        return line.withUnsafeBufferPointer { bytes -> Location? in
            var reader = Reader(bytes: bytes, index: prefix.count)
            return reader.location(endsLine: true)
        }
    }

    private static let batchPrefix = Array(#"{"type":"batch","count":"#.utf8)

    /// The batch of a line that starts `{"type":"batch","count":` with the keys in the order the encoder writes
    /// them and every location on the fast path, or `nil` (then `JSONDecoder` reads the line).
    static func batch(_ line: [UInt8]) -> (locations: [Location], reason: String, id: String?)? {
        guard line.count > batchPrefix.count, line.starts(with: batchPrefix) else { return nil }
        return line.withUnsafeBufferPointer { bytes -> (locations: [Location], reason: String, id: String?)? in
            var reader = Reader(bytes: bytes, index: batchPrefix.count)
            return reader.batch()
        }
    }

    /// The fixes of a batch's `records` (``HeldBatchEncoding/records``): base64 of whole journal records, each
    /// with its checksum; `nil` when the text is not that, or any record is damaged (nothing is skipped on the
    /// wire: the daemon sends the batch again).
    static func records(_ text: UnsafeBufferPointer<UInt8>) -> [Location]? {
        guard let data = Base64.decode(text) else { return nil }
        return data.withUnsafeBufferPointer { bytes -> [Location]? in
            var locations: [Location] = []
            // A record is at least 36 bytes (length, mask, flags, three coordinates, checksum).
            locations.reserveCapacity(bytes.count / 36)
            var offset = 0
            var sources = LocationJournal.SourceCache()
            while offset < bytes.count {
                guard case .success(let (location, next)) = LocationJournal.record(bytes, at: offset, sourceCache: &sources) else {
                    return nil
                }
                locations.append(location)
                offset = next
            }
            return locations
        }
    }

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var index: Int

        private enum Key: Int {
            case latitude, longitude, altitude, ellipsoidalAltitude, horizontalAccuracy, verticalAccuracy, speed
            case speedAccuracy, course, courseAccuracy, climb, hdop, vdop, pdop, timestamp, fixMode
            case correctionStatus, satellitesUsed, satellitesVisible, source, isSimulated, time
        }

        /// The keys by their length in bytes, so a key is found by comparing bytes, without an allocation or a
        /// hash for each of the ~20 keys of each of 100,000 fixes of a batch.
        private static let keysByLength: [[([UInt8], Key)]] = {
            let keys: [(String, Key)] = [
                ("latitude", .latitude), ("longitude", .longitude), ("altitude", .altitude),
                ("ellipsoidalAltitude", .ellipsoidalAltitude), ("horizontalAccuracy", .horizontalAccuracy),
                ("verticalAccuracy", .verticalAccuracy), ("speed", .speed), ("speedAccuracy", .speedAccuracy),
                ("course", .course), ("courseAccuracy", .courseAccuracy), ("climb", .climb), ("hdop", .hdop),
                ("vdop", .vdop), ("pdop", .pdop), ("timestamp", .timestamp), ("fixMode", .fixMode),
                ("correctionStatus", .correctionStatus), ("satellitesUsed", .satellitesUsed),
                ("satellitesVisible", .satellitesVisible), ("source", .source), ("isSimulated", .isSimulated),
                ("time", .time),
            ]
            var table = [[([UInt8], Key)]](repeating: [], count: keys.map(\.0.utf8.count).max()! + 1)
            for (name, key) in keys { table[name.utf8.count].append((Array(name.utf8), key)) }
            return table
        }()

        private func key(_ range: Range<Int>) -> Key? {
            guard range.count < Self.keysByLength.count else { return nil }
            let candidates = Self.keysByLength[range.count]
            let text = UnsafeBufferPointer(rebasing: bytes[range])
            for (name, key) in candidates where name.elementsEqual(text) { return key }
            return nil
        }

        /// The last source name read and its text: a batch's fixes mostly share one, made into a `String` once.
        private var lastSource: (bytes: [UInt8], text: String)? = nil

        init(bytes: UnsafeBufferPointer<UInt8>, index: Int) {
            self.bytes = bytes
            self.index = index
        }

        /// `N,"reason":"R"[,"id":"I"],"locations":[{…},…]}` to the end of the line.
        mutating func batch() -> (locations: [Location], reason: String, id: String?)? {
            let start = index
            guard number() != nil, let count = Int(String(decoding: bytes[start..<index], as: UTF8.self)), count >= 0,
                literal(#","reason":"#), let reasonRange = string(),
                let reason = String(validating: bytes[reasonRange], as: UTF8.self)
            else { return nil }
            var id: String?
            if literal(#","id":"#) {
                guard let range = string(), let text = String(validating: bytes[range], as: UTF8.self) else { return nil }
                id = text
            }
            if literal(#","records":"#) {
                guard let range = string(), let locations = LocationLineDecoder.records(UnsafeBufferPointer(rebasing: bytes[range])),
                    take(UInt8(ascii: "}")), index == bytes.count, locations.count == count
                else { return nil }
                return (locations, reason, id)
            }
            guard literal(#","locations":["#) else { return nil }
            var locations: [Location] = []
            // The count is checked against what the line holds, and caps what is reserved ahead.
            locations.reserveCapacity(min(count, bytes.count / 40))
            if !take(UInt8(ascii: "]")) {
                repeat {
                    guard take(UInt8(ascii: "{")), let location = location(endsLine: false) else { return nil }
                    locations.append(location)
                } while take(UInt8(ascii: ","))
                guard take(UInt8(ascii: "]")) else { return nil }
            }
            guard take(UInt8(ascii: "}")), index == bytes.count, locations.count == count else { return nil }
            return (locations, reason, id)
        }

        private mutating func literal(_ text: String) -> Bool {
            let utf8 = Array(text.utf8)
            guard index + utf8.count <= bytes.count, bytes[index..<(index + utf8.count)].elementsEqual(utf8) else { return false }
            index += utf8.count
            return true
        }

        /// The fields of a location up to its closing brace; with `endsLine`, that brace must end the line.
        mutating func location(endsLine: Bool) -> Location? {
            var numbers = InlineArray<14, Double?>(repeating: nil)
            var date: Date?, fixMode: FixMode?, correction: String?, source: String?
            var satellitesUsed: Int?, satellitesVisible: Int?, isSimulated: Bool?
            var seen: UInt32 = 0
            while true {
                guard let keyRange = string(), let key = key(keyRange), seen & (1 << key.rawValue) == 0,
                    take(UInt8(ascii: ":"))
                else { return nil }
                seen |= 1 << key.rawValue
                switch key {
                case .time:
                    // The exact fix time, which a `timestamp` (milliseconds) beside it does not replace.
                    let start = index
                    guard number() != nil, let seconds = RFC3339.parseSeconds(UnsafeBufferPointer(rebasing: bytes[start..<index]))
                    else { return nil }
                    date = seconds
                case .timestamp:
                    // Read from the bytes; RFC3339 takes ASCII only, so invalid UTF-8 is refused here too. After
                    // an exact `time` it is only checked (lines of earlier versions carry the timestamp alone).
                    guard let range = string(), let parsed = RFC3339.parse(UnsafeBufferPointer(rebasing: bytes[range])) else {
                        return nil
                    }
                    if date == nil { date = parsed.date }
                case .source:
                    guard let range = string() else { return nil }
                    let text = UnsafeBufferPointer(rebasing: bytes[range])
                    if let last = lastSource, last.bytes.elementsEqual(text) {
                        source = last.text
                    } else {
                        guard let made = String(validating: text, as: UTF8.self) else { return nil }
                        lastSource = (Array(text), made)
                        source = made
                    }
                case .fixMode, .correctionStatus:
                    guard let range = string() else { return nil }
                    // Invalid UTF-8 is refused, as JSONDecoder refuses it, never repaired.
                    guard let text = String(validating: bytes[range], as: UTF8.self) else { return nil }
                    if key == .fixMode {
                        guard let mode = FixMode(rawValue: text) else { return nil }
                        fixMode = mode
                    } else {
                        correction = text
                    }
                case .satellitesUsed, .satellitesVisible:
                    // A whole number only, read exactly, as JSONDecoder takes an Int.
                    let start = index
                    guard number() != nil, !bytes[start..<index].contains(UInt8(ascii: ".")),
                        let count = Int(String(decoding: bytes[start..<index], as: UTF8.self))
                    else { return nil }
                    if key == .satellitesUsed { satellitesUsed = count } else { satellitesVisible = count }
                case .isSimulated:
                    guard let value = boolean() else { return nil }
                    isSimulated = value
                default:
                    guard let value = number() else { return nil }
                    numbers[key.rawValue] = value
                }
                if take(UInt8(ascii: ",")) { continue }
                guard take(UInt8(ascii: "}")), !endsLine || index == bytes.count else { return nil }
                break
            }
            guard let latitude = numbers[Key.latitude.rawValue], let longitude = numbers[Key.longitude.rawValue], let date
            else { return nil }
            func value(_ key: Key) -> Double? { numbers[key.rawValue] }
            let location = Location(
                latitude: latitude, longitude: longitude, altitude: value(.altitude),
                ellipsoidalAltitude: value(.ellipsoidalAltitude), horizontalAccuracy: value(.horizontalAccuracy),
                verticalAccuracy: value(.verticalAccuracy), speed: value(.speed), speedAccuracy: value(.speedAccuracy),
                course: value(.course), courseAccuracy: value(.courseAccuracy), climb: value(.climb),
                timestamp: date, fixMode: fixMode, correctionStatus: correction.flatMap(CorrectionStatus.init(rawValue:)),
                satellitesUsed: satellitesUsed, satellitesVisible: satellitesVisible, source: source,
                isSimulated: isSimulated ?? false, hdop: value(.hdop), vdop: value(.vdop), pdop: value(.pdop))
            return location.hasValidCoordinate ? location : nil
        }

        private mutating func take(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        /// A string without escapes or control characters: the range of its contents.
        private mutating func string() -> Range<Int>? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            let start = index
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    index += 1
                    return start..<(index - 1)
                }
                if byte == UInt8(ascii: "\\") || byte < 0x20 { return nil }
                index += 1
            }
            return nil
        }

        private mutating func boolean() -> Bool? {
            for (word, value) in [("true", true), ("false", false)] {
                let utf8 = Array(word.utf8)
                if index + utf8.count <= bytes.count, bytes[index..<(index + utf8.count)].elementsEqual(utf8) {
                    index += utf8.count
                    return value
                }
            }
            return nil
        }

        /// A number in JSON's grammar without an exponent, read as `JSONDecoder` reads it (correctly rounded).
        private mutating func number() -> Double? {
            let start = index
            func digits() -> Int {
                let first = index
                while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") { index += 1 }
                return index - first
            }
            _ = take(UInt8(ascii: "-"))
            let integer = index
            guard digits() > 0 else { return nil }
            if bytes[integer] == UInt8(ascii: "0"), index - integer > 1 { return nil }
            if take(UInt8(ascii: ".")), digits() == 0 { return nil }
            // An exponent (the encoder writes one only for the tiniest and hugest values) is left to JSONDecoder,
            // which refuses what underflows or overflows rather than rounding it.
            guard index < bytes.count, bytes[index] | 0x20 != UInt8(ascii: "e") else { return nil }
            guard let value = Double(String(decoding: bytes[start..<index], as: UTF8.self)), value.isFinite else { return nil }
            // A decimal too small for a Double (JSONDecoder refuses it) is not rounded to zero here.
            if value == 0, bytes[start..<index].contains(where: { $0 >= UInt8(ascii: "1") && $0 <= UInt8(ascii: "9") }) {
                return nil
            }
            return value
        }
    }
}
