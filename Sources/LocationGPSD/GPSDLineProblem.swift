/// What was wrong with one line from gpsd: the line was skipped, or a value in it was left out.
struct GPSDLineProblem: Sendable, Equatable {
    /// The kinds of problem; each kind is reported at most once per connection.
    enum Kind: Sendable, Hashable {
        /// Not one well-formed JSON object (garbage, a cut line, `NaN`, two objects on one line...).
        case notJSON
        /// Longer than ``GPSDLineReader/capacity`` bytes.
        case tooLong
        /// A JSON object without a `class` string, so not a gpsd message.
        case noClass
        /// A TPV that cannot be a fix: an impossible mode, time or coordinate, or mode 2/3 without a
        /// position. The whole line is refused.
        case refusedFix
        /// A TPV that is valid JSON but that libgps cannot unpack (`"lat":"52.5"`, spacing its parser
        /// does not expect). The whole line is skipped.
        case unreadableTPV
        /// A value outside its range (a negative error estimate, a speed of 1e308 m/s...); that value
        /// alone is left out, the rest of the report is used.
        case valueLeftOut
    }

    /// The kind, for counting and limiting messages.
    var kind: Kind
    /// What was wrong, for a person: "latitude 91 (outside -90…90)"; for a value left out, with the
    /// message it came in: "a TPV with eph -5 (outside 0…40000000 m)".
    var detail: String
    /// The start of the line, quoted and escaped (messages about values name the value instead).
    var quotedLine: String

    /// Whether the line was skipped entirely (rather than used without one value).
    var skipsLine: Bool { kind != .valueLeftOut }

    /// Whether the line shows that the peer is not speaking gpsd's protocol at all.
    var isNotGPSD: Bool { kind == .notJSON || kind == .tooLong || kind == .noClass }

    /// One line for a person, naming the peer and saying what happened to the data.
    func message(endpoint: String) -> String {
        switch kind {
        case .notJSON:
            "gpsd at \(endpoint) sent a line that is not valid JSON (\(detail)): \(quotedLine); skipped it"
        case .tooLong:
            "gpsd at \(endpoint) sent a line longer than \(GPSDLineReader.capacity) bytes: \(quotedLine); skipped it"
        case .noClass:
            "gpsd at \(endpoint) sent a JSON object without a \"class\": \(quotedLine); skipped it"
        case .refusedFix:
            "gpsd at \(endpoint) sent a TPV with \(detail); no fix taken from it"
        case .unreadableTPV:
            "gpsd at \(endpoint) sent a TPV that \(detail): \(quotedLine); no fix taken from it"
        case .valueLeftOut:
            "gpsd at \(endpoint) sent \(detail); left that value out"
        }
    }
}
