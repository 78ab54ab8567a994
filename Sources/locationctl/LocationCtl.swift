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
            Exit codes: 0 ok (also when the reader of the output goes away, as with | head: it has what it \
            wanted), 64 usage, 65 bad input data, 66 input file missing, 69 gpsd or locationd unreachable, \
            73 output file cannot be created, 74 output cannot be written (a full disk), 75 no fix within \
            the timeout, 77 not allowed to use locationd's socket. --output opens the path itself: an \
            existing file keeps its mode, owner and links, a new one is created 0600, a FIFO or device is written \
            to (plot alone writes a new file and renames it over the old one once complete, keeping its mode and owner). \
            SIGINT, SIGTERM and SIGHUP end a command cleanly, completing its output (a GPX document stays \
            valid), and exit 130, 143 and 129 (128 + the signal, as a shell reports it), so that a script \
            can tell an interrupted run from a finished one; a watch ended by --count or --duration exits 0. \
            --format is text, json or gpx on every command that prints locations (json: JSON lines for a \
            stream, one object for current; jsonl is accepted as another name for json).
            """,
        version: ServiceVersion.string,
        subcommands: [Replay.self, Watch.self, Current.self, State.self, Status.self, Apps.self, Plot.self]
    )

    /// Runs the command; every failure is one line on standard error with its exit code.
    static func main() async {
        await CommandMain.run(Self.self)
    }
}
