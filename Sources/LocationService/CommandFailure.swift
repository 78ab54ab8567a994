import Foundation
import LocationCore
import UnixSignals

/// A failure that ends a command: one line on standard error and a sysexits code.
package struct CommandFailure: Error, CustomStringConvertible {
    /// The sysexits code.
    package var exitCode: Int32
    /// The line printed after the program name.
    package var message: String
    /// Whether ``exit()`` leaves standard error alone (an interrupted run).
    package var isSilent = false

    /// Creates a failure with a sysexits code and a message.
    package init(exitCode: Int32, message: String) {
        self.exitCode = exitCode
        self.message = message
    }

    /// 64: the command line or configuration is wrong.
    package static func usage(_ message: String) -> CommandFailure { CommandFailure(exitCode: 64, message: message) }
    /// 65: the input data is malformed.
    package static func badData(_ message: String) -> CommandFailure { CommandFailure(exitCode: 65, message: message) }
    /// 66: an input file is missing or unreadable.
    package static func missingInput(_ message: String) -> CommandFailure { CommandFailure(exitCode: 66, message: message) }
    /// 69: gpsd or locationd cannot be reached.
    package static func unavailable(_ message: String) -> CommandFailure { CommandFailure(exitCode: 69, message: message) }
    /// 73: an output file or socket cannot be created.
    package static func cannotCreate(_ message: String) -> CommandFailure { CommandFailure(exitCode: 73, message: message) }
    /// 74: writing the output failed (a full disk, an I/O error).
    package static func ioError(_ message: String) -> CommandFailure { CommandFailure(exitCode: 74, message: message) }
    /// 75: no fix arrived within the timeout.
    package static func noFix(_ message: String) -> CommandFailure { CommandFailure(exitCode: 75, message: message) }
    /// 77: this user may not use the service, such as another user's owner-only control socket.
    package static func noPermission(_ message: String) -> CommandFailure { CommandFailure(exitCode: 77, message: message) }
    /// 128 + the signal's number (130 SIGINT, 143 SIGTERM, 129 SIGHUP): the command was interrupted after
    /// completing its output. Silent, as a program ended by Ctrl-C is: the person or script that sent the
    /// signal knows why.
    package static func interrupted(by signal: UnixSignal) -> CommandFailure {
        var failure = CommandFailure(exitCode: Interrupts.exitCode(for: signal), message: "interrupted by \(signal)")
        failure.isSilent = true
        return failure
    }

    /// The exit code that goes with a location error.
    package static func from(_ error: LocationError) -> CommandFailure {
        switch error.code {
        case .sourceUnavailable: .unavailable(error.message)
        case .noFix: .noFix(error.message)
        case .invalidConfiguration, .invalidTransition: .usage(error.message)
        case .journalIO: .cannotCreate(error.message)
        default: .badData(error.message)
        }
    }

    /// What an output that ended early means for the command: `nil` when its reader went away (a closed
    /// pipe ends the command quietly, with 0: the reader has what it wanted), 74 when a write failed, 65 when
    /// the content cannot be written in the format, and for a rotating log's next file what its opening
    /// would have meant for the first (see ``openingOutput(_:)``).
    package static func from(_ failure: EventWriter.Failure) -> CommandFailure? {
        switch failure.kind {
        case .readerGone: nil
        case .writeFailed: .ioError(failure.message)
        case .invalidContent: .badData(failure.message)
        case .cannotOpen(let code): .openingOutput(LocationError(code, failure.message))
        }
    }

    /// The message.
    package var description: String { message }

    /// Prints `program: message` on standard error and exits with the code.
    package func exit() -> Never {
        if isSilent { Foundation.exit(exitCode) }
        let program = CommandMain.commandLine.first.flatMap { $0.split(separator: "/").last.map(String.init) } ?? "locationctl"
        // Messages quote files, receivers and the daemon: one line, with no control character let through.
        EventWriter.writeToStandardError("\(program): \(TerminalText.escaped(message))\n")
        Foundation.exit(exitCode)
    }
}

/// Runs a command body, turning failures into one line on standard error and the right exit code.
package func runReportingFailures(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let failure as CommandFailure {
        failure.exit()
    } catch let error as LocationError {
        CommandFailure.from(error).exit()
    }
}
