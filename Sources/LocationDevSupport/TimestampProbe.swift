import Foundation
import LocationCore

/// The library's one RFC 3339 reader and writer, for the benchmarks: their generated files carry the same
/// timestamps the library writes, and their peers parse times with the same code as LocationGPX.
public enum TimestampProbe {
    /// The instant `text` names, or `nil` when it is not an RFC 3339 time the library accepts.
    public static func date(parsing text: String) -> Date? { RFC3339.parse(text)?.date }

    /// Appends `date` as RFC 3339 UTC, as the library's GPX and JSON writers do.
    public static func append(_ date: Date, to bytes: inout [UInt8]) { RFC3339.append(date, to: &bytes) }
}
