import ArgumentParser
import Foundation
import LocationCommandLine
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
            reached, 77 when --socket names another user's socket, and 75 when no fix arrives within \
            --timeout.
            """)

    @Option(help: ArgumentHelp("Ask gpsd at this address directly.", valueName: "HOST[:PORT]"))
    var gpsd: String?

    @Option(help: ArgumentHelp("Ask locationd on this control socket.", valueName: "PATH"))
    var socket: String?

    @Option(help: ArgumentHelp("Give up after this many seconds (default 30).", valueName: "SEC"))
    var timeout: Double = 30

    @Option(help: ArgumentHelp("Wait for a fix at least this accurate, else take the best within the timeout.", valueName: "METRES"))
    var accuracy: Double?

    @Option(help: ArgumentHelp("Output format.", valueName: "text|json"))
    var format: CurrentFormat = .text

    enum CurrentFormat: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    func validate() throws {
        if gpsd != nil, socket != nil { throw ValidationError("use either --gpsd or --socket, not both") }
        if !(timeout.isFinite && timeout > 0) { throw ValidationError("--timeout must be a positive number of seconds") }
        if let accuracy, !(accuracy.isFinite && accuracy > 0) { throw ValidationError("--accuracy must be a positive number of metres") }
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
