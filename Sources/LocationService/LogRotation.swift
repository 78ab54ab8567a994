import Foundation
import LocationCore

#if canImport(Glibc)
    import Glibc
#endif

/// How a logger's output moves from file to file (`--rotate daily|hourly|SIZE` with an `--output` pattern,
/// `--keep N`, `--gzip`).
///
/// The pattern names each file: `%Y`, `%m`, `%d`, `%H` (UTC, of the fix time), `%F` (`%Y-%m-%d`), `%n` (a
/// number from 1, for rotation by size) and `%%`. Daily rotation needs the day in it, hourly the hour too,
/// by size `%n`. A rotating log always adds to its files (a restart the same day continues that day's
/// file), and a held batch goes whole into the file of its first fix.
package struct LogRotation: Sendable, Equatable {
    /// When a new file begins.
    package enum Period: Sendable, Equatable {
        /// At each new UTC day of the fix time.
        case daily
        /// At each new UTC hour of the fix time.
        case hourly
        /// When the file has reached this many bytes.
        case size(Int)
    }

    /// The file name pattern, as given.
    package var pattern: String
    /// When a new file begins.
    package var period: Period
    /// How many files to keep, the current one included (older ones are deleted); `nil` keeps all.
    package var keep: Int?
    /// Whether a file is compressed with gzip once the log has moved on from it.
    package var gzip: Bool

    /// The smallest and largest file size for `--rotate SIZE`.
    package static let sizeRange = 4096...(1 << 40)

    /// Checks `pattern` against `period`: a usage failure (64) naming what is missing.
    package init(pattern: String, period: Period, keep: Int?, gzip: Bool) throws(CommandFailure) {
        self.pattern = pattern
        self.period = period
        self.keep = keep
        self.gzip = gzip
        let name = String(pattern.split(separator: "/", omittingEmptySubsequences: false).last ?? "")
        let directory = FilePathText.parent(of: pattern)
        if pattern.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) {
            throw .usage("--output \(ValueRange.printable(pattern)): a log file name pattern cannot hold control characters (a line break, a tab)")
        }
        if directory.contains("%") {
            throw .usage("--output \(pattern): fields (%Y, %m, %d, %H, %F, %n) belong in the file name, not in its directory")
        }
        var fields: Set<Character> = []
        var index = name.startIndex
        while index < name.endIndex {
            if name[index] == "%" {
                let next = name.index(after: index)
                guard next < name.endIndex, "YmdHFn%".contains(name[next]) else {
                    throw .usage("--output \(pattern): unknown field \(next < name.endIndex ? "%\(name[next])" : "% at the end"); use %Y %m %d %H %F %n or %%")
                }
                fields.insert(name[next])
                index = name.index(after: next)
            } else {
                index = name.index(after: index)
            }
        }
        let hasDay = fields.contains("F") || (fields.contains("Y") && fields.contains("m") && fields.contains("d"))
        switch period {
        case .daily where !hasDay:
            throw .usage("--rotate daily needs the date in --output, such as \(directory == "." ? "" : directory + "/")track-%F.gpx")
        case .hourly where !(hasDay && fields.contains("H")):
            throw .usage("--rotate hourly needs the date and hour in --output, such as \(directory == "." ? "" : directory + "/")track-%F-%H.gpx")
        case .size where !fields.contains("n"):
            throw .usage("--rotate by size needs %n (the file's number) in --output, such as \(directory == "." ? "" : directory + "/")track-%n.gpx")
        default:
            break
        }
    }

    /// Parses `--rotate`: `daily`, `hourly`, or a size in bytes with an optional `k`, `M` or `G` (powers of
    /// 1024), 4k to 1024G.
    package static func period(parsing text: String) throws(CommandFailure) -> Period {
        switch text.lowercased() {
        case "daily": return .daily
        case "hourly": return .hourly
        default: break
        }
        var digits = Substring(text)
        var unit = 1
        if let last = digits.last, let power = ["k": 10, "m": 20, "g": 30][last.lowercased()] {
            unit = 1 << power
            digits = digits.dropLast()
        }
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber), let count = Int(digits),
            count.multipliedReportingOverflow(by: unit).overflow == false, sizeRange.contains(count * unit)
        else {
            throw .usage("--rotate \(ValueRange.printable(text)): use daily, hourly or a size from 4k to 1024G (such as 10M)")
        }
        return .size(count * unit)
    }

    /// The file for a fix at `date` (its UTC time), with number `index` for `%n`.
    package func fileName(at date: Date, index: Int = 1) -> String {
        fileName(at: date, numberText: String(index))
    }

    private func fileName(at date: Date, numberText: String) -> String {
        // YYYY-MM-DDTHH:MM:SSZ of the whole second.
        let time = Array(RFC3339.string(from: date, fractionDigits: 0).utf8)
        let text = time.count == 20 ? String(decoding: time, as: UTF8.self) : "0000-00-00T00:00:00Z"
        let parts = (year: text.prefix(4), month: text.dropFirst(5).prefix(2), day: text.dropFirst(8).prefix(2), hour: text.dropFirst(11).prefix(2))
        var result = ""
        var escaping = false
        for character in pattern {
            if escaping {
                switch character {
                case "Y": result += parts.year
                case "m": result += parts.month
                case "d": result += parts.day
                case "H": result += parts.hour
                case "F": result += "\(parts.year)-\(parts.month)-\(parts.day)"
                case "n": result += numberText
                default: result.append(character)
                }
                escaping = false
            } else if character == "%" {
                escaping = true
            } else {
                result.append(character)
            }
        }
        return result
    }

    /// The file a log starting at `date` writes: by time, that of `date`; by size, the highest-numbered one
    /// there is (numbers `--keep` deleted below it do not matter), or the next number when that one is
    /// compressed already, or number 1.
    package func currentFile(at date: Date) -> (name: String, index: Int) {
        guard case .size = period else { return (fileName(at: date), 1) }
        // The name with the date filled in and the number left open.
        let marker = "\u{1}"
        let name = String(fileName(at: date, numberText: marker).split(separator: "/", omittingEmptySubsequences: false).last ?? "")
        let expression = "^" + name.components(separatedBy: marker).map { NSRegularExpression.escapedPattern(for: $0) }
            .joined(separator: "([0-9]{1,9})") + "(\\.gz)?$"
        var highest: (index: Int, compressed: Bool)?
        if let regex = try? NSRegularExpression(pattern: expression),
            let names = try? FileManager.default.contentsOfDirectory(atPath: FilePathText.parent(of: pattern))
        {
            for name in names {
                guard let match = regex.firstMatch(in: name, range: NSRange(name.startIndex..., in: name)),
                    let range = Range(match.range(at: 1), in: name), let index = Int(name[range]), index > 0
                else { continue }
                let compressed = match.range(at: match.numberOfRanges - 1).location != NSNotFound
                if highest == nil || index > highest!.index || (index == highest!.index && !compressed) {
                    highest = (index, compressed)
                }
            }
        }
        guard let highest else { return (fileName(at: date, index: 1), 1) }
        let index = highest.compressed ? highest.index + 1 : highest.index
        return (fileName(at: date, index: index), index)
    }

    /// The files of this log in its directory (compressed ones too), oldest first: by name, numbers
    /// compared as numbers, which for zero-padded dates and `%n` is the order they were begun.
    package func files() -> [String] {
        let directory = FilePathText.parent(of: pattern)
        let namePattern = String(pattern.split(separator: "/", omittingEmptySubsequences: false).last ?? "")
        var expression = "^"
        var escaping = false
        for character in namePattern {
            if escaping {
                switch character {
                case "Y": expression += "[0-9]{4}"
                case "m", "d", "H": expression += "[0-9]{2}"
                case "F": expression += "[0-9]{4}-[0-9]{2}-[0-9]{2}"
                case "n": expression += "[0-9]+"
                default: expression += NSRegularExpression.escapedPattern(for: String(character))
                }
                escaping = false
            } else if character == "%" {
                escaping = true
            } else {
                expression += NSRegularExpression.escapedPattern(for: String(character))
            }
        }
        expression += "(\\.gz)?$"
        guard let regex = try? NSRegularExpression(pattern: expression),
            let names = try? FileManager.default.contentsOfDirectory(atPath: directory)
        else { return [] }
        let matching = names.filter { name in
            regex.firstMatch(in: name, range: NSRange(name.startIndex..., in: name)) != nil
        }
        return matching.sorted { $0.compare($1, options: .numeric) == .orderedAscending }
            .map { directory == "." && !pattern.hasPrefix("./") ? $0 : directory + "/" + $0 }
    }

    /// Deletes the oldest files beyond ``keep`` (never `current`); the paths deleted.
    @discardableResult
    package func prune(keeping current: String) -> [String] {
        guard let keep else { return [] }
        let all = files().filter { $0 != current && $0 != current + ".gz" }
        let excess = all.count + 1 - keep
        guard excess > 0 else { return [] }
        let doomed = Array(all.prefix(excess))
        for path in doomed { unlink(path) }
        return doomed
    }
}
