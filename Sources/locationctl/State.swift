import ArgumentParser
import Foundation
import LocationControl
import LocationCore
import LocationService

/// `locationctl state`: prints or changes locationd's lifecycle state.
struct State: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print or change locationd's app lifecycle state.",
        discussion: """
            Without an argument prints the state. With one, moves the daemon there through the allowed \
            intermediate states, exactly as an app would: background switches to the reduced policy, \
            suspended holds fixes, and returning to active delivers the held batch to watchers. \
            With --app, acts on that app's session alone; the policy options set that app's own policy \
            (without --app, the shared app default's): \
            locationctl state background --app logger --background-location on --reduced-interval 60 \
            keeps the app logger getting one fix a minute in the background.
            """)

    @Argument(help: ArgumentHelp("The state to move to.", valueName: "active|inactive|background|suspended"))
    var target: TargetState?

    @OptionGroup var daemon: DaemonOptions

    @OptionGroup(title: "The app's own policy (in its session; other apps keep theirs)") var appPolicy: AppPolicyOptions

    @Option(help: ReportFormat.help)
    var format: ReportFormat = .text

    enum TargetState: String, ExpressibleByArgument, CaseIterable {
        case active, inactive, background, suspended
    }

    func run() async throws {
        try await runReportingFailures {
            let (_, sockets) = try await daemon.resolve()
            let (response, path) = try await DaemonClient.request(
                .state(set: target?.rawValue), sockets: sockets, app: daemon.app,
                // An app named here is created if new when a state or a policy is set (an empty policy changes
                // nothing); reading one never creates it.
                policy: try appPolicy.policy() ?? (daemon.app != nil && target != nil ? AppPolicy() : nil))
            // A reply without these members is malformed, not "unknown": an error, never exit 0.
            let state: ApplicationState, background: Bool, policy: AccuracyPolicy
            do throws(ControlError) {
                let name = try response.decode(String.self, forKey: "state")
                guard let known = ApplicationState(rawValue: name) else {
                    throw ControlError(.protocolError, "the daemon's reply names an unknown state \"\(TerminalText.escaped(name))\"")
                }
                let policyName = try response.decode(String.self, forKey: "policy")
                guard let knownPolicy = AccuracyPolicy(rawValue: policyName) else {
                    throw ControlError(.protocolError, "the daemon's reply names an unknown policy \"\(TerminalText.escaped(policyName))\"")
                }
                state = known
                policy = knownPolicy
                background = try response.decode(Bool.self, forKey: "executingInBackground")
            } catch {
                throw CommandFailure.badData("locationd at \(path): \(error.message)")
            }
            switch format {
            case .text:
                let place = state == .suspended ? "in the background, not running" : background ? "executing in background" : "foreground"
                print("\(state.rawValue) (\(place), \(policy.rawValue) accuracy)")
            case .json:
                print(String(decoding: JSONLineEncoder.stateLine(state).dropLast(), as: UTF8.self))
            }
        }
    }
}
