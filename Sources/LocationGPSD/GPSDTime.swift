import Foundation
import LocationCore

/// A gpsd fix time with the receiver's full resolution, so fixes of one epoch compare exactly equal.
struct GPSDTime: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Whole seconds since 1970-01-01 (UTC).
    var seconds: Int64
    /// Nanoseconds within the second.
    var nanoseconds: Int64

    /// The time as a `Date`, built from the 2001 reference date (Date's own base) to keep precision.
    var date: Date {
        Date(timeIntervalSinceReferenceDate: Double(seconds - 978_307_200) + Double(nanoseconds) / 1e9)
    }

    static func < (lhs: GPSDTime, rhs: GPSDTime) -> Bool {
        (lhs.seconds, lhs.nanoseconds) < (rhs.seconds, rhs.nanoseconds)
    }

    var description: String { RFC3339.string(from: date) }
}
