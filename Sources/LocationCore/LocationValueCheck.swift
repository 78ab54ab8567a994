/// The one check of a ``Location``'s values, whatever its source (gpsd, a GPX file, a test script): every
/// fix a ``LocationSourceContext`` delivers goes through it.
///
/// A coordinate outside its range makes the fix impossible, so it is refused. Any other value outside its
/// range is left out (`nil`, as if the receiver had not reported it), because one absurd speed does not
/// make the position wrong. The ranges are the same ones the gpsd source has always applied.
package enum LocationValueCheck {
    /// Degrees.
    package static let latitude = -90.0...90.0
    /// Degrees.
    package static let longitude = -180.0...180.0
    /// Metres; generous enough for a receiver in low Earth orbit.
    package static let altitude = -1_000_000.0...1_000_000.0
    /// Position error estimates and dilutions' metres: never negative, never beyond Earth's circumference.
    package static let distanceError = 0.0...40_000_000.0
    /// Speed over ground and its error estimate, m/s.
    package static let speed = 0.0...100_000.0
    /// Vertical speed, m/s.
    package static let climb = -100_000.0...100_000.0
    /// Course and its error estimate, degrees.
    package static let angle = 0.0...360.0
    /// Dilution of precision (unitless).
    package static let dilution = 0.0...100_000.0

    /// What the check found.
    package enum Outcome: Sendable, Equatable {
        /// Every value is within its range.
        case valid
        /// Values were out of range and are left out of `location`; `problems` names each, such as
        /// `horizontalAccuracy -5 (outside 0…40000000 m)`.
        case leftOut(Location, problems: [Problem])
        /// The fix is impossible (its coordinate is out of range).
        case refused(Problem)
    }

    /// One value outside its range.
    package struct Problem: Sendable, Hashable {
        /// The field's name, as in JSON: `horizontalAccuracy`.
        package var field: String
        /// `horizontalAccuracy -5 (outside 0…40000000 m)`.
        package var description: String

        /// Creates a problem report for a field.
        package init(field: String, description: String) {
            self.field = field
            self.description = description
        }
    }

    /// Checks every value of `location`.
    package static func check(_ location: Location) -> Outcome {
        // The common case, every value fine, allocates nothing.
        guard !allValid(location) else { return .valid }
        if !(location.latitude.isFinite && latitude.contains(location.latitude)) {
            return .refused(problem("latitude", location.latitude, latitude, "°"))
        }
        if !(location.longitude.isFinite && longitude.contains(location.longitude)) {
            return .refused(problem("longitude", location.longitude, longitude, "°"))
        }
        var checked = location
        var problems: [Problem] = []
        func keep(_ value: Double?, _ range: ClosedRange<Double>, _ field: String, _ unit: String) -> Double? {
            guard let value else { return nil }
            if value.isFinite, range.contains(value) { return value }
            problems.append(problem(field, value, range, unit))
            return nil
        }
        checked.altitude = keep(location.altitude, altitude, "altitude", "m")
        checked.ellipsoidalAltitude = keep(location.ellipsoidalAltitude, altitude, "ellipsoidalAltitude", "m")
        checked.horizontalAccuracy = keep(location.horizontalAccuracy, distanceError, "horizontalAccuracy", "m")
        checked.verticalAccuracy = keep(location.verticalAccuracy, distanceError, "verticalAccuracy", "m")
        checked.speed = keep(location.speed, speed, "speed", "m/s")
        checked.speedAccuracy = keep(location.speedAccuracy, speed, "speedAccuracy", "m/s")
        checked.course = keep(location.course, angle, "course", "°")
        checked.courseAccuracy = keep(location.courseAccuracy, angle, "courseAccuracy", "°")
        checked.climb = keep(location.climb, climb, "climb", "m/s")
        checked.hdop = keep(location.hdop, dilution, "hdop", "")
        checked.vdop = keep(location.vdop, dilution, "vdop", "")
        checked.pdop = keep(location.pdop, dilution, "pdop", "")
        if let satellites = location.satellitesUsed, satellites < 0 || satellites > 1_000 {
            problems.append(Problem(field: "satellitesUsed", description: "satellitesUsed \(satellites) (outside 0…1000)"))
            checked.satellitesUsed = nil
        }
        if let satellites = location.satellitesVisible, satellites < 0 || satellites > 1_000 {
            problems.append(Problem(field: "satellitesVisible", description: "satellitesVisible \(satellites) (outside 0…1000)"))
            checked.satellitesVisible = nil
        }
        return problems.isEmpty ? .valid : .leftOut(checked, problems: problems)
    }

    private static func allValid(_ location: Location) -> Bool {
        func ok(_ value: Double?, _ range: ClosedRange<Double>) -> Bool {
            guard let value else { return true }
            return value.isFinite && range.contains(value)
        }
        return latitude.contains(location.latitude) && longitude.contains(location.longitude)
            && ok(location.altitude, altitude) && ok(location.ellipsoidalAltitude, altitude)
            && ok(location.horizontalAccuracy, distanceError) && ok(location.verticalAccuracy, distanceError)
            && ok(location.speed, speed) && ok(location.speedAccuracy, speed) && ok(location.course, angle)
            && ok(location.courseAccuracy, angle) && ok(location.climb, climb) && ok(location.hdop, dilution)
            && ok(location.vdop, dilution) && ok(location.pdop, dilution)
            && (location.satellitesUsed.map { (0...1_000).contains($0) } ?? true)
            && (location.satellitesVisible.map { (0...1_000).contains($0) } ?? true)
    }

    private static func problem(_ field: String, _ value: Double, _ range: ClosedRange<Double>, _ unit: String) -> Problem {
        let suffix = unit.isEmpty ? "" : " \(unit)"
        return Problem(
            field: field,
            description: "\(field) \(ValueRange.text(value)) (outside \(ValueRange.text(range.lowerBound))…\(ValueRange.text(range.upperBound))\(suffix))")
    }
}
