import UnixSignals

/// SIGINT, SIGTERM and SIGHUP (what a dropped SSH session sends) as an async sequence, so a command can end
/// cleanly (closing a GPX document, say) instead of dying mid-write.
package enum Interrupts {
    /// Starts trapping the signals; each delivery yields once. With `hangupReopens`, SIGHUP is not among
    /// them: a rotating log reopens its file on it instead (see ``reopenOnHangup(_:)``).
    package static func install(hangupReopens: Bool = false) async -> UnixSignalsSequence {
        hangupReopens ? await UnixSignalsSequence(trapping: .sigint, .sigterm) : await UnixSignalsSequence(trapping: .sigint, .sigterm, .sighup)
    }

    /// Reopens `writer`'s file at each SIGHUP, as logrotate expects of a logger, until the task is cancelled.
    package static func reopenOnHangup(_ writer: EventWriter) async -> Task<Void, Never> {
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        return Task {
            for await _ in hangups { writer.reopen() }
        }
    }

    /// The exit code of a command that `signal` ended early: 128 + the signal's number, as a shell reports a
    /// process the signal killed (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP), so that a script can
    /// tell an interrupted run from a finished one although the output was completed.
    package static func exitCode(for signal: UnixSignal) -> Int32 {
        128 + signal.rawValue
    }
}
