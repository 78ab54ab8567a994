/// A count with its noun in the right number, for messages people read: "1 held fix", "2 held fixes".
extension Int {
    /// The count and `singular` for 1 (and −1), else the count and `plural` (by default `singular` with
    /// "es" after s, x, z, ch and sh, else with "s").
    package func counted(_ singular: String, _ plural: String? = nil) -> String {
        if self == 1 || self == -1 { return "\(self) \(singular)" }
        if let plural { return "\(self) \(plural)" }
        let sibilant = ["s", "x", "z", "ch", "sh"].contains { singular.hasSuffix($0) }
        return "\(self) \(singular)\(sibilant ? "es" : "s")"
    }
}
