import Foundation
import LocationCore
import LocationGPX

/// What the fuzz target does with one input, and the properties it checks. A violated property is thrown as
/// a ``PropertyViolation``; the fuzz target then stops the process, which libFuzzer records as a crash
/// with the input that caused it.
///
/// For any bytes at all, the reader must either return points or throw a `GPXError`, and:
/// - chunk boundaries change nothing that matters: the input read whole and in small pieces (a size chosen
///   from the input's hash, 1–64 bytes) fails in both or in neither, gives the same points when it does not
///   fail, and points that agree as far as both go when it does;
/// - once it has thrown, it throws the same error again;
/// - every point is on the globe, every number finite, every count ≥ 0, every position ≥ 1;
/// - an error names the input, says something, and gives a line and column ≥ 1 when it gives one, and is
///   one a reader of bytes can raise (never `io`, `missing-time`, `invalid-location`, `writer-closed`);
/// - the points it read, written by `GPXWriter` and read again, are the same locations (with the writer's
///   documented exceptions), and the writer refuses exactly the timestamps outside the years 0001–9999.
public enum GPXFuzzHarness {
    /// The name the input goes by in errors.
    public static let inputName = "fuzz-input.gpx"
    /// The timestamp given to untimed points when they become `Location`s.
    public static let untimedTimestamp = Date(timeIntervalSince1970: 1_700_000_000)

    /// The points read before the reader stopped, and the error it stopped with.
    public struct Outcome {
        public var points: [GPXPoint]
        public var error: GPXError?
    }

    /// A property that does not hold, and how.
    public struct PropertyViolation: Error, CustomStringConvertible {
        public var description: String
    }

    /// Runs every check on `bytes`; returns what the reader made of them, read whole.
    @discardableResult
    public static func check(_ bytes: [UInt8]) throws(PropertyViolation) -> Outcome {
        let whole = try read(bytes, chunkSize: 1 << 18)
        let chunkSize = 1 + Int(fnv1a(bytes) % 64)
        let pieces = try read(bytes, chunkSize: chunkSize)
        // Whether it fails must not depend on chunking. Where it stops may: libxml2's push parser decodes
        // and looks ahead of what it has parsed, so an error can surface before the points that precede
        // it in one chunking and after them in another. Either way it never alters or invents a point.
        try require(
            (pieces.error == nil) == (whole.error == nil),
            "read in \(chunkSize)-byte chunks: \(describe(pieces.error)); whole: \(describe(whole.error))")
        let common = min(pieces.points.count, whole.points.count)
        try require(
            whole.error == nil ? pieces.points == whole.points : pieces.points.prefix(common) == whole.points.prefix(common),
            "read in \(chunkSize)-byte chunks: \(pieces.points.count) points, whole: \(whole.points.count) points, or different values")
        for point in whole.points { try checkPoint(point) }
        if let error = whole.error { try checkError(error) }
        try checkRoundTrip(whole.points)
        return whole
    }

    /// Reads every point of `bytes`, handing them to the parser `chunkSize` bytes at a time.
    public static func read(_ bytes: [UInt8], chunkSize: Int) throws(PropertyViolation) -> Outcome {
        let reader = GPXReader(bytes: bytes, name: inputName, chunkSize: chunkSize)
        var points: [GPXPoint] = []
        let failure: GPXError
        do {
            while let point = try reader.next() { points.append(point) }
            return Outcome(points: points, error: nil)
        } catch {
            failure = error
        }
        let again: Result<GPXPoint?, GPXError> = Result { () throws(GPXError) in try reader.next() }
        try require(again == .failure(failure), "after \(failure) the reader went on with \(again)")
        return Outcome(points: points, error: failure)
    }

    private static func checkPoint(_ point: GPXPoint) throws(PropertyViolation) {
        try require(
            point.latitude.isFinite && abs(point.latitude) <= 90 && point.longitude.isFinite
                && abs(point.longitude) <= 180,
            "a point off the globe: \(point)")
        let numbers: [Double?] = [
            point.elevation, point.geoidHeight, point.hdop, point.vdop, point.pdop, point.speed, point.course,
            point.horizontalAccuracy, point.verticalAccuracy, point.speedAccuracy, point.courseAccuracy, point.climb,
            point.ellipsoidalAltitude, point.airTemperature, point.waterTemperature, point.depth,
            point.time?.timeIntervalSinceReferenceDate,
        ]
        try require(numbers.allSatisfy { $0?.isFinite ?? true }, "a value that is not finite: \(point)")
        let counts = [point.satellites, point.heartRate, point.cadence]
        try require(counts.allSatisfy { ($0 ?? 0) >= 0 }, "a negative count: \(point)")
        try require(
            point.line >= 1 && point.container >= 0 && point.segment >= 0 && point.index >= 0,
            "a position out of range: \(point)")
    }

    private static func checkError(_ error: GPXError) throws(PropertyViolation) {
        try require(error.file == inputName, "the error does not name the input: \(error)")
        try require(!error.message.isEmpty, "an error without a message: \(error.code)")
        try require((error.line ?? 1) >= 1 && (error.column ?? 1) >= 1, "an error at an impossible place: \(error)")
        try require(
            ![.io, .missingTime, .invalidLocation, .writerClosed].contains(error.code),
            "an error a reader of bytes cannot raise: \(error)")
    }

    /// Years 0001 to 9999, what the writer can hold.
    private static func isWritable(_ date: Date) -> Bool {
        let seconds = date.timeIntervalSince1970
        return seconds >= -62_135_596_800 && seconds < 253_402_300_800
    }

    private static func checkRoundTrip(_ points: [GPXPoint]) throws(PropertyViolation) {
        var written: [Location] = []
        var bytes: [UInt8] = []
        let writer = try unwrap(Result { () throws(GPXError) in try GPXWriter { bytes.append(contentsOf: $0) } }, "the writer cannot start")
        for point in points {
            let location = try unwrap(
                Result { () throws(GPXError) in try point.location(timestampIfUntimed: untimedTimestamp) },
                "a point with a fallback timestamp cannot become a Location")
            let outcome = Result { () throws(GPXError) in try writer.write(location) }
            switch outcome {
            case .success:
                try require(isWritable(location.timestamp), "the writer took the timestamp \(location.timestamp)")
                written.append(location)
            case .failure(let error):
                try require(
                    error.code == .invalidLocation && !isWritable(location.timestamp),
                    "the writer refused \(location): \(error)")
            }
        }
        try unwrap(Result { () throws(GPXError) in try writer.finish() }, "the writer cannot finish")
        let again = try read(bytes, chunkSize: 1 << 18)
        let document = String(decoding: bytes, as: UTF8.self)
        try require(again.error == nil, "what the writer wrote does not read back: \(describe(again.error))\n\(document)")
        try require(again.points.count == written.count, "wrote \(written.count) points, read back \(again.points.count)")
        for (original, point) in zip(written, again.points) {
            let back = try unwrap(Result { () throws(GPXError) in try point.location() }, "a written point has no time")
            try require(
                sameAfterRoundTrip(original, back),
                "round trip changed a location:\n  wrote \(original)\n  read  \(back)\n\(document)")
        }
    }

    /// The value of `result`, or a violation saying `what` went wrong.
    @discardableResult
    private static func unwrap<Value>(_ result: Result<Value, GPXError>, _ what: String) throws(PropertyViolation) -> Value {
        switch result {
        case .success(let value): return value
        case .failure(let error): throw PropertyViolation(description: "\(what): \(error)")
        }
    }

    /// Whether `back` is `original` as the writer documents it: longitude 180 becomes -180, characters
    /// XML cannot carry in `source` become U+FFFD, and a timestamp within 97 days of 2001-01-01 may move
    /// by less than a nanosecond.
    private static func sameAfterRoundTrip(_ original: Location, _ back: Location) -> Bool {
        var expected = original
        if expected.longitude == 180 { expected.longitude = -180 }
        expected.source = expected.source.map { source in
            String(
                String.UnicodeScalarView(
                    source.unicodeScalars.map { scalar in
                        let value = scalar.value
                        let carried = value >= 0x20 || value == 0x09 || value == 0x0A || value == 0x0D
                        return carried && value != 0xFFFE && value != 0xFFFF ? scalar : "\u{FFFD}"
                    }))
        }
        if abs(expected.timestamp.timeIntervalSinceReferenceDate) < 97 * 86_400,
            abs(expected.timestamp.timeIntervalSince(back.timestamp)) < 1e-9
        {
            expected.timestamp = back.timestamp
        }
        return expected == back
    }

    private static func describe(_ error: GPXError?) -> String {
        error.map { "\($0.code.rawValue): \($0)" } ?? "no error"
    }

    /// FNV-1a, to pick a chunk size that the same input always gets.
    private static func fnv1a(_ bytes: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
        return hash
    }

    private static func require(_ condition: Bool, _ message: @autoclosure () -> String) throws(PropertyViolation) {
        guard !condition else { return }
        throw PropertyViolation(description: message())
    }
}
