import ArgumentParser
import Foundation
import LocationService

/// `locationctl`: watch, replay, and query positions from the command line.
@main
struct LocationCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "locationctl",
        abstract: "Watch, replay and query positions from gpsd, GPX files and locationd.",
        discussion: """
            Exit codes: 0 ok, 64 usage, 65 bad input, 66 input missing, 69 gpsd or locationd unreachable, 73/74 \
            output cannot be created/written, 75 no fix in time, 77 not allowed to use locationd's socket, \
            128 + the signal that ended a command. Everything else: locationctl SUBCOMMAND --help, man locationctl.
            """,
        version: ServiceVersion.string,
        subcommands: [Replay.self, Watch.self, Current.self, Sky.self, State.self, Status.self, Apps.self, Region.self, Plot.self]
    )

    /// Runs the command; every failure is one line on standard error with its exit code.
    static func main() async {
        // A file size limit reached (ulimit -f) is a failed write to report (EFBIG, exit 74) with the output
        // left whole, not SIGXFSZ killing the command in the middle of a write.
        signal(SIGXFSZ, SIG_IGN)
        await CommandMain.run(Self.self)
    }
}
