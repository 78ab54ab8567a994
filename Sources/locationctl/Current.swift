import ArgumentParser
import Foundation
import LocationControl
import LocationCore
import LocationGPSD
import LocationService

/// `locationctl current`: one position, from locationd when it answers, else straight from gpsd.
struct Current: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print one position.",
        discussion: """
            Asks locationd on its control socket when it answers (--socket, or the default sockets), \
            otherwise gpsd directly (the configuration's, default localhost:2947). --gpsd, --device or \
            another gpsd flag asks gpsd directly without trying locationd. Exits 69 when neither can be \
            reached, or at once with the daemon's reason when locationd answers that its source is down; \
            77 when --socket names another user's socket, and 75 when no fix (or, with --accuracy, none that accurate) \
            arrives within --timeout.
            """)

    @OptionGroup var gpsdOptions: GPSDOptions

    @OptionGroup var daemon: DaemonOptions

    @Option(name: .customLong("timeout"), parsing: .unconditional, help: ArgumentHelp("Give up after this many seconds (default 30; \(ValueRange.positionTimeout)).", valueName: "SEC"))
    var timeoutArgument: NumberArgument?

    @Option(name: .customLong("accuracy"), parsing: .unconditional, help: ArgumentHelp("Wait for a fix at least this accurate; exit 75 when none is within the timeout, naming the best there was (\(ValueRange.distance)).", valueName: "METRES"))
    var accuracyArgument: NumberArgument?

    @Option(name: .customLong("max-age"), parsing: .unconditional, help: ArgumentHelp("Through locationd: the oldest its last fix may be to be the answer at once (default 2; \(ValueRange.maximumAge); 0 always waits for a new fix). Never an older one. Straight from gpsd every fix is new.", valueName: "SEC"))
    var maxAgeArgument: NumberArgument?

    @Flag(name: .customLong("best-effort"), help: "With --accuracy: print the best fix within the timeout, exit 0, when none is that accurate (as Core Location's requestLocation).")
    var bestEffort = false

    /// Seconds to wait, checked.
    private var timeout: Double { get throws(CommandFailure) { try timeoutArgument?.value(in: .positionTimeout, for: "--timeout") ?? 30 } }
    /// Metres wanted, checked.
    private var accuracy: Double? { get throws(CommandFailure) { try accuracyArgument?.value(in: .distance, for: "--accuracy") } }

    private var maxAge: Double? { get throws(CommandFailure) { try maxAgeArgument?.value(in: .maximumAge, for: "--max-age") } }

    @Option(help: OutputFormat.help([.text, .json, .gpx, .nmea]))
    var format: OutputFormat = .text

    func validate() throws {
        if bestEffort, accuracyArgument == nil {
            throw ValidationError("--best-effort goes with --accuracy: without a bound every fix is the best one")
        }
        if gpsdOptions.isSet, daemon.socket != nil {
            throw ValidationError("--socket asks locationd; it cannot be combined with gpsd options (--gpsd, --device, --gpsd-*)")
        }
        do {
            _ = try timeout
            _ = try accuracy
            _ = try maxAge
        } catch { throw ValidationError(error.message) }
    }

    func run() async throws {
        try await runReportingFailures {
            signal(SIGPIPE, SIG_IGN)
            let location = try await locate()
            if let accuracy = try self.accuracy, !bestEffort, !(location.horizontalAccuracy.map { $0 <= accuracy } ?? false) {
                let best = location.horizontalAccuracy.map { String(format: "±%.1f m", $0) } ?? "of unknown accuracy"
                throw CommandFailure.noFix(
                    "no fix within \(ValueRange.text(accuracy)) m came in \(ValueRange.text(try self.timeout)) s; the best was \(best) (--best-effort prints it)")
            }
            switch format {
            case .text: print(TextEventFormatter.line(location))
            // The location line of watch and replay, so that a file of current's lines (cron) reads like
            // their logs, by jq's filter of the README and by plot.
            case .json: print(String(decoding: JSONLineEncoder.line(.locations([location], .live)), as: UTF8.self), terminator: "")
            case .gpx: try writeGPX(location)
            case .nmea: print(NMEAEpochEncoder.sentences(location), terminator: "")
            }
        }
    }

    /// The location as a GPX document of one track point, on standard output.
    private func writeGPX(_ location: Location) throws(CommandFailure) {
        let writer: EventWriter
        do throws(LocationError) { writer = try EventWriter(format: .gpx, path: nil, flushEachEvent: false) } catch {
            throw CommandFailure.cannotCreate(error.message)
        }
        writer.write(.locations([location], .live))
        do throws(EventWriter.Failure) { try writer.finish() } catch {
            if let failure = CommandFailure.from(error) { throw failure }
        }
    }

    private func locate() async throws -> Location {
        let timeout = try self.timeout
        let accuracy = try self.accuracy
        let resolved = try await daemon.resolve()
        var settings = resolved.settings
        if !gpsdOptions.isSet,
            let location = try await DaemonClient.current(
                sockets: resolved.sockets, timeout: timeout, accuracy: accuracy, maxAge: try maxAge, app: daemon.app)
        {
            return location
        }
        try gpsdOptions.apply(to: &settings)
        let source = try GPSDLocationSource(configuration: settings.gpsdConfiguration)
        do {
            return try await source.currentLocation(desiredAccuracy: accuracy, timeout: .seconds(timeout))
        } catch {
            // gpsd went away, stalled, or is not gpsd: unavailable (69), not bad input.
            let failure = error.code == .sourceFailed ? CommandFailure.unavailable(error.message) : CommandFailure.from(error)
            throw failure
        }
    }
}
