import ArgumentParser

/// How `locationctl` writes what it receives: `--format text|json|gpx|nmea` on every command that prints
/// locations.
///
/// One vocabulary for every subcommand: `json` is JSON Lines for a stream (`watch`, `replay`: one event per
/// line) and one object for a single answer (`current`). `jsonl`, the earlier spelling for streams, is
/// accepted as an alias so that existing scripts keep working; case does not matter (`JSON`).
package enum OutputFormat: String, Sendable, Hashable, CaseIterable {
    /// Aligned lines for people: locations on standard output, every other event on standard error.
    case text
    /// JSON: one object per line (see ``JSONLineEncoder``), every event on the output, each typed.
    case json
    /// A GPX 1.1 track of the locations; other events go to standard error as text.
    case gpx
    /// NMEA 0183 sentences (GGA, GSA, RMC) of each location, as a receiver sends them (see
    /// ``NMEAEpochEncoder``); other events go to standard error as text.
    case nmea

    /// Parses a `--format` value: a name in any case, or an alias.
    package init?(formatName: String) {
        switch formatName.lowercased() {
        case "text": self = .text
        case "json", "jsonl": self = .json
        case "gpx": self = .gpx
        case "nmea": self = .nmea
        default: return nil
        }
    }

    /// The `--format` help of a command that writes `formats`, saying that `jsonl` is the same as `json`.
    package static func help(_ formats: [OutputFormat]) -> ArgumentHelp {
        // ArgumentParser lists the values and the default after the text: the text does not repeat them.
        ArgumentHelp(
            "Output format; jsonl is accepted as another name for json.",
            valueName: formats.map(\.rawValue).joined(separator: "|"))
    }
}

extension OutputFormat: ExpressibleByArgument {
    /// Accepts `text`, `json` (or `jsonl`), `gpx` and `nmea`, in any case.
    package init?(argument: String) {
        self.init(formatName: argument)
    }

    /// The values shell completion offers: the canonical names only.
    package static var allValueStrings: [String] { allCases.map(\.rawValue) }
}

/// The formats of a command that prints a report, not locations (`status`, `state`): text or json, with
/// the same spellings as ``OutputFormat``.
package enum ReportFormat: String, Sendable, Hashable, CaseIterable, ExpressibleByArgument {
    /// Aligned lines for people.
    case text
    /// One JSON object.
    case json

    /// Accepts `text` and `json` (or `jsonl`), in any case.
    package init?(argument: String) {
        switch OutputFormat(formatName: argument) {
        case .text: self = .text
        case .json: self = .json
        case .gpx, .nmea, nil: return nil
        }
    }

    /// The values shell completion offers.
    package static var allValueStrings: [String] { allCases.map(\.rawValue) }

    /// The `--format` help, in the words of ``OutputFormat/help(_:)``.
    package static var help: ArgumentHelp { OutputFormat.help([.text, .json]) }
}
