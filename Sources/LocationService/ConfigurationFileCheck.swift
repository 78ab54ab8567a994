import Foundation
import LocationCore
import Yams

/// Checks the shape of a configuration file before its values are read: every key must be one of
/// ``ServiceConfiguration/keys`` (or a section holding them), and every value a single value, so that a
/// misspelt key or a list where a number belongs is refused rather than silently ignored.
package enum ConfigurationFileCheck {
    /// Throws ``LocationError/Code/invalidConfiguration`` naming the first unknown key (with the nearest
    /// known one) or the first value of the wrong shape.
    /// - Returns: Whether the file sets anything at all (an empty file, or one of comments only, does not).
    @discardableResult
    package static func check(yaml text: String, path: String) throws(LocationError) -> Bool {
        // The node tree, not Swift values: constructing values traps on keys that are lists or maps
        // (`[]: x`), found by the yaml-config fuzz target.
        let document: Node?
        do { document = try Yams.compose(yaml: text) } catch {
            // The values' reader reports syntax errors, with their position.
            return true
        }
        guard let document else { return false }  // an empty file sets nothing
        guard let top = document.mapping else {
            throw LocationError(.invalidConfiguration, "\(path): expected keys and values, such as 'reduced: {interval: 60}'")
        }
        let known = ServiceConfiguration.keys
        let sections = Set(known.compactMap { $0.name.split(separator: ".").count == 2 ? String($0.name.split(separator: ".")[0]) : nil })
        func walk(_ map: Node.Mapping, prefix: String) throws(LocationError) {
            for (keyNode, value) in map {
                guard let name = keyNode.scalar?.string else {
                    throw LocationError(
                        .invalidConfiguration,
                        "\(path): a key\(prefix.isEmpty ? "" : " under \(prefix)") is \(shape(of: keyNode)), not a name")
                }
                let full = prefix.isEmpty ? name : "\(prefix).\(name)"
                if full == ServiceConfiguration.uplinksKey || full == ServiceConfiguration.regionsKey {
                    // A list of URLs or regions (each checked when it is read), or nothing.
                    let isEmpty = value.scalar.map { $0.string.isEmpty } ?? false
                    let isList = value.sequence?.allSatisfy { $0.scalar != nil } ?? false
                    guard isEmpty || isList else {
                        let example = full == ServiceConfiguration.uplinksKey ? "URLs (- mqtt://…)" : "regions (- home=52.52,13.405,150)"
                        throw LocationError(
                            .invalidConfiguration, "\(path): \(full) expects a list of \(example), got \(shape(of: value))")
                    }
                } else if let key = known.first(where: { $0.name == full }) {
                    try checkShape(value, of: key, path: path)
                } else if prefix.isEmpty, sections.contains(name) {
                    // A section whose keys are all commented out (`nmea:` and nothing under it) sets nothing.
                    if let scalar = value.scalar, scalar.string.isEmpty || scalar.string == "~" || scalar.string == "null" { continue }
                    guard let inner = value.mapping else {
                        throw LocationError(
                            .invalidConfiguration,
                            "\(path): \(name) is a section; expected keys under it, such as \(known.first { $0.name.hasPrefix(name + ".") }!.name), got \(shape(of: value))")
                    }
                    try walk(inner, prefix: name)
                } else if let renamed = Self.renamedKeys[full] {
                    throw LocationError(
                        .invalidConfiguration,
                        "\(path): \(full) is gone: \(renamed.why); use \(renamed.key)")
                } else {
                    let candidates = known.map(\.name) + (prefix.isEmpty ? sections.sorted() : [])
                    let nearest = candidates.min { distance(full, $0) < distance(full, $1) }!
                    throw LocationError(
                        .invalidConfiguration,
                        "\(path): unknown key \(ValueRange.printable(full)); did you mean \(nearest)? (the commented locationd.yaml lists every key: /etc/locationd/ once installed, Config/ in the source)")
                }
            }
        }
        try walk(top, prefix: "")
        return true
    }

    /// Keys of earlier versions, with what replaced them and why.
    private static let renamedKeys: [String: (key: String, why: String)] = [
        "lifecycle.gracePeriod": (
            "lifecycle.didEnterBackgroundBudget",
            "a background app is no longer left running for a grace period; it is suspended as soon as its didEnterBackground handling ends, which may take this long"
        )
    ]

    private static func checkShape(_ value: Node, of key: ConfigurationKey, path: String) throws(LocationError) {
        guard value.scalar == nil else { return }  // a single value (`key:` with nothing after it is a null scalar)
        let expected: String
        switch key.kind {
        case .text: expected = "text"
        case .number(let range), .integer(let range): expected = "a number in \(range)"
        case .onOff: expected = "on or off"
        case .choice(let words): expected = words.joined(separator: " or ")
        }
        throw LocationError(.invalidConfiguration, "\(path): \(key.name) expects \(expected), got \(shape(of: value))")
    }

    private static func shape(of value: Node) -> String {
        switch value {
        case .sequence: "a list"
        case .mapping: "a section of keys"
        case .alias: "an alias"
        case .scalar: "a single value"
        }
    }

    /// The edit distance between two keys, ignoring case.
    static func distance(_ a: String, _ b: String) -> Int {
        let x = Array(a.lowercased()), y = Array(b.lowercased())
        var previous = Array(0...y.count)
        for i in 1...max(1, x.count) where !x.isEmpty {
            var current = [i] + Array(repeating: 0, count: y.count)
            for j in 1...max(1, y.count) where !y.isEmpty {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x[i - 1] == y[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return x.isEmpty ? y.count : previous[y.count]
    }
}
