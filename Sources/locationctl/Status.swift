import ArgumentParser
import Foundation
import LocationControl
import LocationCore
import LocationService

/// `locationctl status`: what locationd is doing.
struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print locationd's state, policy, source, last fix, batch and journal.")

    @Option(help: ArgumentHelp("locationd's control socket (default: $XDG_RUNTIME_DIR/locationd/control.sock).", valueName: "PATH"))
    var socket: String?

    @Option(help: ArgumentHelp("Output format.", valueName: "text|json"))
    var format: StatusFormat = .text

    func run() async throws {
        try await runReportingFailures {
            let path = socket ?? ServiceConfiguration.defaultSocketPath()
            let response = try await DaemonClient.request(.status, socket: path)
            let status: DaemonStatus
            do throws(ControlError) { status = try response.decode(DaemonStatus.self, forKey: "status") } catch {
                throw CommandFailure.badData("locationd at \(path): \(error.message)")
            }
            switch format {
            case .text:
                print(status.text)
            case .json:
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                print(String(decoding: try encoder.encode(status), as: UTF8.self))
            }
        }
    }
}
