/// Why a plot cannot be drawn, in words a person can act on.
package struct PlotError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of problem it is, so that a caller can choose an exit code.
    package enum Code: String, Sendable, Hashable {
        /// The input holds nothing to draw (no positions, or only invalid ones).
        case noPoints
        /// The input is not what it claims to be.
        case invalidInput
        /// A size or option is out of range.
        case invalidOption
    }

    /// The kind.
    package var code: Code
    /// One line for a person.
    package var message: String

    /// Creates an error.
    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `message`.
    package var description: String { message }
}
