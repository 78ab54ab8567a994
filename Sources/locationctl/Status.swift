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

    @Flag(help: "List every app's session you may see (yours, and default), each with its status.")
    var all = false

    func validate() throws {
        if all, daemon.app != nil { throw ValidationError("--all lists every app; it cannot be combined with --app") }
    }

    func run() async throws {
        try await runReportingFailures {
            let (_, sockets) = try await daemon.resolve()
            if all { return try await Self.listApps(sockets, format: format) }
            let (response, path) = try await DaemonClient.request(.status, sockets: sockets, app: daemon.app)
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

    /// `status --all` and `apps list`: every app's status, one block each in text, one JSON array in JSON.
    static func listApps(_ sockets: ControlSocketChoice, format: ReportFormat) async throws {
        let (response, path) = try await DaemonClient.request(.apps, sockets: sockets)
        var apps: [DaemonStatus]
        do throws(ControlError) { apps = try response.decode([DaemonStatus].self, forKey: "apps") } catch {
            throw CommandFailure.badData("locationd at \(path): \(error.message)")
        }
        for index in apps.indices { apps[index].socket = path }
        switch format {
        case .text:
            print(apps.map { app in
                let whose = app.owner.map { owner in owner == getuid() ? "" : " of uid \(owner)" } ?? ""
                return "app \(app.app ?? "?")\(whose)\n" + app.text
            }.joined(separator: "\n\n"))
        case .json:
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(apps), as: UTF8.self))
        }
    }
}
