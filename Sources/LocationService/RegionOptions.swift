import ArgumentParser
import Foundation
import LocationCore

/// `--region NAME=LAT,LON,RADIUS[,DWELL]` (repeatable), for the commands whose manager runs here (`replay`,
/// `watch` with gpsd).
package struct RegionOptions: ParsableArguments {
    /// Creates the options (ArgumentParser fills them in).
    package init() {}

    @Option(name: .customLong("region"), parsing: .unconditionalSingleValue, help: ArgumentHelp("Monitor a circular region: its events (enter; exit after two fixes clearly outside; dwell after DWELL seconds inside) come after the fix that caused them. Repeatable; RADIUS in metres.", valueName: "NAME=LAT,LON,RADIUS[,DWELL]"))
    package var regions: [String] = []

    /// The regions, checked: a malformed one is a usage failure (64) naming it and what is wrong.
    package func resolve() throws(CommandFailure) -> [CircularRegion] {
        var seen: Set<String> = []
        var result: [CircularRegion] = []
        for text in regions {
            let region = try Self.parse(text)
            guard seen.insert(region.identifier).inserted else {
                throw .usage("--region \(ValueRange.printable(text)): the name \(region.identifier) is given twice")
            }
            result.append(region)
        }
        return result
    }

    /// Parses `NAME=LAT,LON,RADIUS[,DWELL]`; messages begin with `place` and the text.
    package static func parse(_ text: String, place: String = "--region") throws(CommandFailure) -> CircularRegion {
        let usage = "use NAME=LAT,LON,RADIUS[,DWELL], such as home=52.5200,13.4050,150"
        // The numbers hold no '=': a name may.
        guard let equals = text.lastIndex(of: "=") else {
            throw .usage("\(place) \(ValueRange.printable(text)): no '='; \(usage)")
        }
        let name = String(text[..<equals])
        let numbers = text[text.index(after: equals)...].split(separator: ",", omittingEmptySubsequences: false)
        guard (3...4).contains(numbers.count) else {
            throw .usage("\(place) \(ValueRange.printable(text)): \(numbers.count) numbers; \(usage)")
        }
        var values: [Double] = []
        for (field, number) in zip(["latitude", "longitude", "radius", "dwell"], numbers) {
            let trimmed = number.trimmingCharacters(in: .whitespaces)
            // Decimal numbers only: no nan, inf, hex or exponent tricks.
            guard !trimmed.isEmpty, trimmed.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == "." || $0 == "-" || $0 == "+") }),
                let value = Double(trimmed), value.isFinite
            else {
                throw .usage("\(place) \(ValueRange.printable(text)): the \(field) \(ValueRange.printable(String(number))) is not a decimal number; \(usage)")
            }
            values.append(value)
        }
        if values.count == 4, !(0...1e9).contains(values[3]) {
            throw .usage("\(place) \(ValueRange.printable(text)): the dwell \(values[3]) s is outside 0…1e9 s")
        }
        do {
            return try CircularRegion(
                identifier: name, latitude: values[0], longitude: values[1], radius: values[2],
                loiteringDelay: values.count == 4 ? .seconds(values[3]) : nil)
        } catch {
            throw .usage("\(place) \(ValueRange.printable(text)): \(error.message)")
        }
    }
}
