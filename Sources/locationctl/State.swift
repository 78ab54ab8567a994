import ArgumentParser
import Foundation
import LocationControl
import LocationCommandLine
import LocationCore
import LocationService

/// `locationctl state`: prints or changes locationd's lifecycle state.
struct State: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print or change locationd's app lifecycle state.",
        discussion: """
            Without an argument prints the state. With one, moves the daemon there through the allowed \
            intermediate states, exactly as an app would: background switches to the reduced policy, \
            suspended holds fixes, and returning to active delivers the held batch to watchers.
            """)

    @Argument(help: ArgumentHelp("The state to move to.", valueName: "active|inactive|background|suspended"))
    var target: TargetState?

    @Option(help: ArgumentHelp("locationd's control socket (default: $XDG_RUNTIME_DIR/locationd/control.sock).", valueName: "PATH"))
    var socket: String?

    @Option(help: ArgumentHelp("Output format.", valueName: "text|json"))
    var format: StatusFormat = .text

    enum TargetState: String, ExpressibleByArgument, CaseIterable {
        case active, inactive, background, suspended
    }

    func run() async throws {
        try await runReportingFailures {
            let path = socket ?? ServiceConfiguration.defaultSocketPath()
            let response = try await DaemonClient.request(.state(set: target?.rawValue), socket: path)
            let state = (try? response.decode(String.self, forKey: "state")) ?? "unknown"
            let background = (try? response.decode(Bool.self, forKey: "executingInBackground")) ?? false
            let policy = (try? response.decode(String.self, forKey: "policy")) ?? "unknown"
            switch format {
            case .text:
                print("\(state) (\(background ? "executing in background" : "foreground"), \(policy) accuracy)")
            case .json:
                var line: [UInt8] = []
                JSONLineEncoder.append(.state(ApplicationState(rawValue: state) ?? .notRunning), to: &line)
                print(String(decoding: line.dropLast(), as: UTF8.self))
            }
        }
    }
}

/// `text` or `json`.
enum StatusFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json
}
