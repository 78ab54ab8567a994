import ArgumentParser
import LocationCore

/// A number given on the command line, kept as written until it is checked against its ``ValueRange``.
///
/// Parsing never fails here, so `nan`, `-1` or `1e300` reach the range check, which names the option, the
/// value as written and the range in one line (exit 64), instead of ArgumentParser's generic complaint.
package struct NumberArgument: ExpressibleByArgument, Sendable, Hashable {
    /// The value as written.
    package var text: String

    /// Keeps the argument as written.
    package init?(argument: String) {
        text = argument
    }

    /// The number, checked against `range`; a usage failure (64) naming `option` otherwise.
    package func value(in range: ValueRange, for option: String) throws(CommandFailure) -> Double {
        do { return try range.value(parsing: text, for: option) } catch { throw CommandFailure.usage(error.message) }
    }

    /// The number of seconds as a `Duration`, checked against `range`; a usage failure (64) naming `option`
    /// otherwise.
    package func duration(in range: ValueRange, for option: String) throws(CommandFailure) -> Duration {
        do { return try range.duration(parsing: text, for: option) } catch { throw CommandFailure.usage(error.message) }
    }

    /// A whole number, checked against `range`; a usage failure (64) naming `option` otherwise.
    package func integer(in range: ValueRange, for option: String) throws(CommandFailure) -> Int {
        let value = try value(in: range, for: option)
        guard value == value.rounded() else {
            throw CommandFailure.usage("\(option): \(ValueRange.printable(text)) is not a whole number; use \(range)")
        }
        return Int(value)
    }
}
