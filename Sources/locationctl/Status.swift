import ArgumentParser
import Foundation
import LocationControl
import LocationCore
import LocationService

/// `locationctl status`: what locationd is doing.
struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print locationd's state, policy, source, last fix, batch and journal, and the socket used.")

    @OptionGroup var daemon: DaemonOptions

    @Option(help: ReportFormat.help)
    var format: ReportFormat = .text

    func run() async throws {
        try await runReportingFailures {
            let (_, sockets) = try await daemon.resolve()
            let (response, path) = try await DaemonClient.request(.status, sockets: sockets)
            var status: DaemonStatus
            do throws(ControlError) { status = try response.decode(DaemonStatus.self, forKey: "status") } catch {
                throw CommandFailure.badData("locationd at \(path): \(error.message)")
            }
            // Which daemon answered matters when more than one socket could have: say which it was.
            status.socket = path
            switch format {
            case .text:
                print(status.text)
            case .json:
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                print(String(decoding: try encoder.encode(status), as: UTF8.self))
            }
        }
    }
}
