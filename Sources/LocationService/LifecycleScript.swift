import Foundation
import LocationCore

/// A plan of lifecycle changes at moments of track time, such as `"120s:background,240s:suspended,480s:active"`.
///
/// Each entry is `TIME:STATE`, separated by commas. TIME is a non-negative number with an optional unit
/// `ms`, `s` (the default), `m` or `h`, counted from the first fix of the replay, at most 10¹² s (more than
/// the widest span GPX times can have, ``ValueRange/trackTime``); STATE is `active`,
/// `inactive`, `background` or `suspended`. Times must not decrease.
package struct LifecycleScript: Sendable, Hashable {
    /// One planned change.
    package struct Entry: Sendable, Hashable {
        /// When, in track time since the first fix.
        package var time: Duration
        /// The state to move to.
        package var state: ApplicationState
    }

    /// The changes in time order.
    package var entries: [Entry]

    /// Parses a script; throws ``LocationError/Code/invalidConfiguration`` naming the bad entry.
    package init(parsing text: String) throws(LocationError) {
        var entries: [Entry] = []
        guard !text.trimmingCharacters(in: .whitespaces).isEmpty else {
            self.entries = []
            return
        }
        let items = text.split(separator: ",", omittingEmptySubsequences: false)
        for (index, rawItem) in items.enumerated() {
            let item = rawItem.trimmingCharacters(in: .whitespaces)
            func bad(_ reason: String) -> LocationError {
                LocationError(.invalidConfiguration, "lifecycle script entry \(index + 1) '\(ValueRange.printable(item))': \(reason)")
            }
            let parts = item.split(separator: ":", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { throw bad("expected TIME:STATE, such as 120s:background") }
            let time = try Self.parseTime(parts[0].trimmingCharacters(in: .whitespaces), entry: index + 1)
            let name = parts[1].trimmingCharacters(in: .whitespaces).lowercased()
            guard let state = ApplicationState(rawValue: name), state != .notRunning else {
                throw bad("'\(ValueRange.printable(parts[1]))' is not a state; use active, inactive, background or suspended")
            }
            if let last = entries.last, time < last.time {
                throw bad("its time comes before the previous entry's; list entries in time order")
            }
            entries.append(Entry(time: time, state: state))
        }
        self.entries = entries
    }

    private static func parseTime(_ text: String, entry: Int) throws(LocationError) -> Duration {
        let units: [(String, Double)] = [("ms", 0.001), ("h", 3600), ("m", 60), ("s", 1)]
        var number = Substring(text)
        var scale = 1.0
        for (suffix, factor) in units where text.hasSuffix(suffix) {
            number = text.dropLast(suffix.count)
            scale = factor
            break
        }
        let place = "lifecycle script entry \(entry) time"
        guard let value = Double(number) else {
            throw LocationError(
                .invalidConfiguration,
                "\(place): '\(ValueRange.printable(text))' is not a time; use a number with s, m, h or ms, such as 90s or 2m")
        }
        // The range applies to seconds; the value is shown as written, unit included.
        return try ValueRange.trackTime.duration(seconds: value * scale, for: place, written: ValueRange.printable(text))
    }
}
