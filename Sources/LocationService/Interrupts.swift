import UnixSignals

/// SIGINT, SIGTERM and SIGHUP (what a dropped SSH session sends) as an async sequence, so a command can end
/// cleanly (closing a GPX document, say) instead of dying mid-write.
package enum Interrupts {
    /// Starts trapping the signals; each delivery yields once.
    package static func install() async -> UnixSignalsSequence {
        await UnixSignalsSequence(trapping: .sigint, .sigterm, .sighup)
    }

    /// The exit code of a command that `signal` ended early: 128 + the signal's number, as a shell reports a
    /// process the signal killed (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP), so that a script can
    /// tell an interrupted run from a finished one although the output was completed.
    package static func exitCode(for signal: UnixSignal) -> Int32 {
        128 + signal.rawValue
    }
}
