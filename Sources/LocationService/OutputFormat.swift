/// How `locationctl` writes what it receives.
package enum OutputFormat: String, Sendable, Hashable, CaseIterable {
    /// Aligned lines for people.
    case text
    /// One JSON object per line (see ``JSONLineEncoder``).
    case jsonl
    /// A GPX 1.1 track of the locations; other events go to standard error as text.
    case gpx
}
