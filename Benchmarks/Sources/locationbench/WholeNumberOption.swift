import Foundation

/// A subcommand's whole-number options (`--runs 3`): read from its arguments, or a usage error (exit 64).
struct WholeNumberOption {
    /// The subcommand's name, for messages: `uplink` in `locationbench uplink: --runs needs …`.
    let command: String
    let arguments: [String]
    /// The largest value taken.
    var maximum = Int.max

    /// The value after `name`, or `fallback` when `name` is not given; exits 64 when it is not a whole
    /// number from 1 to ``maximum``.
    func value(_ name: String, default fallback: Int) -> Int {
        guard let index = arguments.firstIndex(of: name) else { return fallback }
        guard index + 1 < arguments.count, let number = Int(arguments[index + 1]), number > 0, number <= maximum else {
            let range = maximum == .max ? "a positive whole number" : "a whole number from 1 to \(maximum)"
            FileHandle.standardError.write(Data("locationbench \(command): \(name) needs \(range)\n".utf8))
            exit(64)
        }
        return number
    }
}
