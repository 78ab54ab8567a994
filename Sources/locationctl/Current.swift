import ArgumentParser
import Foundation
import LocationControl
import LocationCore
import LocationGPSD
import LocationService

/// `locationctl current`: one position, from locationd when it answers, else straight from gpsd.
struct Current: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print one position.",
        discussion: """
            Asks locationd on its control socket when it answers (--socket, or the default socket), \
            otherwise gpsd directly (--gpsd, default localhost:2947). Exits 69 when neither can be \
            reached, or at once with the daemon's reason when locationd answers that its source is down; \
            77 when --socket names another user's socket, and 75 when no fix arrives within --timeout.
            """)

    @Option(help: ArgumentHelp("Ask gpsd at this address directly.", valueName: "HOST[:PORT]"))
    var gpsd: String?

    @Option(help: ArgumentHelp("Ask locationd on this control socket.", valueName: "PATH"))
    var socket: String?

    @Option(name: .customLong("timeout"), parsing: .unconditional, help: ArgumentHelp("Give up after this many seconds (default 30; \(ValueRange.positionTimeout)).", valueName: "SEC"))
    var timeoutArgument: NumberArgument?

    @Option(name: .customLong("accuracy"), parsing: .unconditional, help: ArgumentHelp("Wait for a fix at least this accurate, else take the best within the timeout (\(ValueRange.distance)).", valueName: "METRES"))
    var accuracyArgument: NumberArgument?

    /// Seconds to wait, checked.
    private var timeout: Double { get throws(CommandFailure) { try timeoutArgument?.value(in: .positionTimeout, for: "--timeout") ?? 30 } }
    /// Metres wanted, checked.
    private var accuracy: Double? { get throws(CommandFailure) { try accuracyArgument?.value(in: .distance, for: "--accuracy") } }

    @Option(help: ArgumentHelp("Output format.", valueName: "text|json"))
    var format: CurrentFormat = .text

    enum CurrentFormat: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    func validate() throws {
        if gpsd != nil, socket != nil { throw ValidationError("use either --gpsd or --socket, not both") }
        do {
            _ = try timeout
            _ = try accuracy
        } catch { throw ValidationError(error.message) }
    }

    func run() async throws {
        try await runReportingFailures {
            let location = try await locate()
            switch format {
            case .text: print(TextEventFormatter.line(location))
            case .json: print(String(decoding: JSONLineEncoder.object(location), as: UTF8.self))
            }
        }
    }

    private func locate() async throws -> Location {
        let timeout = try self.timeout
        let accuracy = try self.accuracy
        if gpsd == nil {
            let path = socket ?? ServiceConfiguration.defaultSocketPath()
            if let location = try await DaemonClient.current(
                socket: path, timeout: timeout, accuracy: accuracy, required: socket != nil)
            {
                return location
            }
        }
        let endpoint: GPSDEndpoint
        do { endpoint = try GPSDEndpoint(parsing: gpsd ?? "localhost:2947") } catch { throw CommandFailure.usage(error.message) }
        let source = try GPSDLocationSource(configuration: GPSDConfiguration(host: endpoint.host, port: endpoint.port))
        do {
            return try await source.currentLocation(desiredAccuracy: accuracy, timeout: .seconds(timeout))
        } catch {
            // gpsd went away, stalled, or is not gpsd: unavailable (69), not bad input.
            let failure = error.code == .sourceFailed ? CommandFailure.unavailable(error.message) : CommandFailure.from(error)
            throw failure
        }
    }
}
