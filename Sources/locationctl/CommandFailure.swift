import ArgumentParser
import Foundation
import LocationCore

/// A failure that ends the command: one line on standard error and a sysexits code.
struct CommandFailure: Error, CustomStringConvertible {
    /// The sysexits code.
    var exitCode: Int32
    /// The line printed, without the program name.
    var message: String

    static func usage(_ message: String) -> CommandFailure { CommandFailure(exitCode: 64, message: message) }
    static func badData(_ message: String) -> CommandFailure { CommandFailure(exitCode: 65, message: message) }
    static func missingInput(_ message: String) -> CommandFailure { CommandFailure(exitCode: 66, message: message) }
    static func unavailable(_ message: String) -> CommandFailure { CommandFailure(exitCode: 69, message: message) }
    static func noFix(_ message: String) -> CommandFailure { CommandFailure(exitCode: 75, message: message) }

    /// The exit code that goes with a location error.
    static func from(_ error: LocationError) -> CommandFailure {
        switch error.code {
        case .sourceUnavailable: .unavailable(error.message)
        case .noFix: .noFix(error.message)
        case .invalidConfiguration, .invalidTransition: .usage(error.message)
        default: .badData(error.message)
        }
    }

    var description: String { message }

    /// Prints the message and exits with the code.
    func exit() -> Never {
        FileHandle.standardError.write(Data("locationctl: \(message)\n".utf8))
        Foundation.exit(exitCode)
    }
}

/// Runs a command body, turning failures into one line on standard error and the right exit code.
func runReportingFailures(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let failure as CommandFailure {
        failure.exit()
    } catch let error as LocationError {
        CommandFailure.from(error).exit()
    }
}
