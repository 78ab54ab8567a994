import LocationCore

/// Why a GPX file could not be read or written, and where: file, line and column.
///
/// ``description`` reads like a compiler diagnostic: `track.gpx:12:31: latitude 91.5 is outside [-90, 90]`.
public struct GPXError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure: a stable code, extensible as `LocationError.Code` is.
    public struct Code: ErrorCode, CaseIterable {
        /// The code as it is written, for example `not-gpx`.
        public var rawValue: String

        /// Creates a code from its spelling.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The file could not be opened or read (or written, for the writer).
        public static let io: Code = "io"
        /// The file is empty, or holds only whitespace.
        public static let empty: Code = "empty"
        /// The file is not well-formed XML (an unclosed or mismatched tag, a bad character, …).
        public static let malformedXML: Code = "malformed-xml"
        /// The file ends in the middle of the document.
        public static let truncated: Code = "truncated"
        /// The document is XML, but its root element is not a GPX `<gpx>`.
        public static let notGPX: Code = "not-gpx"
        /// A GPX element sits where GPX does not allow it (a `<trkpt>` outside `<trkseg>`, …).
        public static let misplacedElement: Code = "misplaced-element"
        /// A point has no `lat` or no `lon` attribute.
        public static let missingCoordinate: Code = "missing-coordinate"
        /// `lat`/`lon` is not a number or lies outside [-90, 90] / [-180, 180].
        public static let invalidCoordinate: Code = "invalid-coordinate"
        /// `<time>` is not an RFC 3339 date-time, or names a date that does not exist.
        public static let invalidTime: Code = "invalid-time"
        /// A numeric or enumerated field (`<ele>`, `<sat>`, `<fix>`, …) holds something else.
        public static let invalidValue: Code = "invalid-value"
        /// Entity references expand to far more text than the file holds (an XML bomb).
        public static let entityExpansion: Code = "entity-expansion"
        /// An untimed point was turned into a `Location` without a fallback timestamp.
        public static let missingTime: Code = "missing-time"
        /// The writer was given a location it cannot write (a coordinate outside the valid range).
        public static let invalidLocation: Code = "invalid-location"
        /// The writer was used after ``GPXWriter/finish()``. A writer used after a failure throws that
        /// failure again instead.
        public static let writerClosed: Code = "writer-closed"

        /// Every code this version of the library defines.
        public static let allCases: [Code] = [
            .io, .empty, .malformedXML, .truncated, .notGPX, .misplacedElement, .missingCoordinate, .invalidCoordinate, .invalidTime, .invalidValue, .entityExpansion, .missingTime, .invalidLocation, .writerClosed,
        ]
    }

    /// What went wrong.
    public var code: Code
    /// The file name or path, when reading or writing a file.
    public var file: String?
    /// 1-based line, when known.
    public var line: Int?
    /// 1-based column, when known.
    public var column: Int?
    /// What is wrong, for a person.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, file: String?, line: Int?, column: Int?, _ message: String) {
        self.code = code
        self.file = file
        self.line = line
        self.column = column
        self.message = message
    }

    /// `file:line:column: message`, leaving out what is unknown.
    public var description: String {
        var place = file ?? "<gpx>"
        if let line {
            place += ":\(line)"
            if let column { place += ":\(column)" }
        }
        return "\(place): \(message)"
    }

    /// The error as a `LocationError`: `LocationError/Code/sourceUnavailable` when the file cannot be
    /// read, `LocationError/Code/invalidData` otherwise.
    public var locationError: LocationError {
        LocationError(code == .io ? .sourceUnavailable : .invalidData, description)
    }
}
