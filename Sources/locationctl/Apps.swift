import ArgumentParser
import Foundation
import LocationControl
import LocationCore
import LocationService

/// `locationctl apps`: the apps you have in locationd, and removing one.
struct Apps: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List or remove your apps in locationd.",
        discussion: """
            Each user's apps are their own: two users may each have an app called logger, and neither sees \
            the other's. A user may have apps.maxPerUser apps (default 8); an app nobody uses for \
            apps.keepAbandoned (default 7 days) is dropped.
            """,
        subcommands: [List.self, Remove.self],
        defaultSubcommand: List.self
    )

    /// `locationctl apps list`: what `status --all` prints.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print every app you may see (yours, and default; root sees every user's), with its status.")

        @OptionGroup var daemon: DaemonSocketOptions

        @Option(help: ReportFormat.help)
        var format: ReportFormat = .text

        func run() async throws {
            try await runReportingFailures {
                let (_, sockets) = try await daemon.resolve()
                try await Status.listApps(sockets, format: format)
            }
        }
    }

    /// `locationctl apps remove NAME`: ends the app's session and deletes the fixes it holds.
    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove one of your apps: its session ends and the fixes it holds are deleted.",
            discussion: "An app attached to locationd (a Swift app running through it) is not removed: quit it first. Its watchers (locationctl watch --app) are told and end with exit 66. Root may remove another user's app with --owner.")

        @OptionGroup var daemon: DaemonSocketOptions

        @Argument(help: ArgumentHelp("The app's id.", valueName: "NAME"))
        var name: String

        @Option(help: ArgumentHelp("The user whose app it is, as a uid (root only). Default: you.", valueName: "UID"))
        var owner: UInt32?

        func validate() throws {
            do throws(ControlError) { try ControlRequest.checkApp(name) } catch {
                throw ValidationError(error.message.replacingOccurrences(of: "\"app\" ", with: "the app "))
            }
            if name == ControlRequest.defaultApp { throw ValidationError("the app default is shared by every client and cannot be removed") }
            if owner == UInt32.max { throw ValidationError("--owner: 4294967295 is not a user id") }
        }

        func run() async throws {
            try await runReportingFailures {
                let (_, sockets) = try await daemon.resolve()
                let (response, _) = try await DaemonClient.request(.remove(app: name, owner: owner), sockets: sockets)
                let deleted = (try? response.decode(Int.self, forKey: "fixesDeleted")) ?? 0
                print("removed the app \(name) and the \(deleted.counted("fix")) it held")
            }
        }
    }
}
