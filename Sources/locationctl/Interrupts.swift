import UnixSignals

/// SIGINT and SIGTERM as an async sequence, so a command can end cleanly (closing a GPX document, say)
/// instead of dying mid-write.
enum Interrupts {
    /// Starts trapping the signals; each delivery yields once.
    static func install() async -> UnixSignalsSequence {
        await UnixSignalsSequence(trapping: .sigint, .sigterm)
    }
}
