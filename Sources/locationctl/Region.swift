import ArgumentParser
import Foundation
import LocationControl
import LocationCore
import LocationService

/// `locationctl region add|remove|list`: an app's regions in locationd.
struct Region: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Monitor regions for an app in locationd: add, remove, list.",
        discussion: """
            locationd evaluates an app's regions on every fix it gives the app, held batches included (each \
            transition at its own fix), and sends {"type":"region","region":NAME,"event":"enter"|"exit"|"dwell",…} \
            to the app's watchers. With --journal it keeps them, with their states, across restarts. Enter \
            at the first fix inside; exit after two fixes clearly outside (distance − accuracy > radius + \
            max(10 % of the radius, 20 m)); dwell once a stay inside lasts DWELL seconds.
            """,
        subcommands: [Add.self, Remove.self, List.self])

    /// `region add NAME=LAT,LON,RADIUS[,DWELL]`.
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Start monitoring a region (replacing one of the same name); creates the app if it is new.")

        @OptionGroup var daemon: DaemonOptions

        @Argument(help: ArgumentHelp("The region, such as home=52.5200,13.4050,150 (metres), with a dwell in seconds after a fourth comma.", valueName: "NAME=LAT,LON,RADIUS[,DWELL]"))
        var region: String

        func run() async throws {
            try await runReportingFailures {
                let region = try RegionOptions.parse(region, place: "region add")
                let (_, sockets) = try await daemon.resolve()
                _ = try await DaemonClient.request(.monitorRegion(region), sockets: sockets, app: daemon.app, policy: AppPolicy())
            }
        }
    }

    /// `region remove NAME`.
    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stop monitoring a region; 66 when the app has none of that name.")

        @OptionGroup var daemon: DaemonOptions

        @Argument(help: ArgumentHelp("The region's name.", valueName: "NAME"))
        var name: String

        func run() async throws {
            try await runReportingFailures {
                let (_, sockets) = try await daemon.resolve()
                _ = try await DaemonClient.request(.stopMonitoringRegion(name), sockets: sockets, app: daemon.app)
            }
        }
    }

    /// `region list`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the app's regions and their states.")

        @OptionGroup var daemon: DaemonOptions

        @Option(help: ReportFormat.help)
        var format: ReportFormat = .text

        func run() async throws {
            try await runReportingFailures {
                let (_, sockets) = try await daemon.resolve()
                let (response, path) = try await DaemonClient.request(.regions, sockets: sockets, app: daemon.app)
                let list: [RegionList.Entry]
                do throws(ControlError) { list = try response.decode([RegionList.Entry].self, forKey: "regions") } catch {
                    throw CommandFailure.badData("locationd at \(path): \(error.message)")
                }
                switch format {
                case .json:
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                    print(String(decoding: try encoder.encode(list), as: UTF8.self))
                case .text:
                    guard !list.isEmpty else {
                        // Said on standard error: standard output stays a list (empty) for scripts.
                        EventWriter.writeToStandardError("locationctl: the app \(TerminalText.escaped(daemon.app ?? ControlRequest.defaultApp)) monitors no region; add one with locationctl region add NAME=LAT,LON,RADIUS\n")
                        return
                    }
                    // Columns aligned on the widest name and centre.
                    let names = list.map { TerminalText.escaped($0.identifier) }
                    let centres = list.map { "\($0.latitude),\($0.longitude)" }
                    let nameWidth = names.map(\.count).max() ?? 0, centreWidth = centres.map(\.count).max() ?? 0
                    for (index, entry) in list.enumerated() {
                        let dwell = entry.loiteringDelay.map { "dwell \(ValueRange.text($0)) s" } ?? ""
                        let radius = "\(ValueRange.text(entry.radius)) m"
                        let line = [
                            names[index].padding(toLength: nameWidth, withPad: " ", startingAt: 0),
                            centres[index].padding(toLength: centreWidth, withPad: " ", startingAt: 0),
                            radius, entry.state.rawValue, dwell,
                        ].joined(separator: "  ")
                        print(line.trimmingCharacters(in: .whitespaces))
                    }
                }
            }
        }
    }
}
