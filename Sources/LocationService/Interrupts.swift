import UnixSignals

/// SIGINT, SIGTERM and SIGHUP (what a dropped SSH session sends) as an async sequence, so a command can end
/// cleanly (closing a GPX document, say) instead of dying mid-write.
package enum Interrupts {
    /// Starts trapping the signals; each delivery yields once.
    package static func install() async -> UnixSignalsSequence {
        await UnixSignalsSequence(trapping: .sigint, .sigterm, .sighup)
    }
}
