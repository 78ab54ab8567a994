import ArgumentParser
import Foundation
import LocationControl
import LocationCore
import LocationGPSD
import LocationService
import UnixSignals

/// `locationctl sky`: the satellites gpsd's receiver sees, refreshed as gpsd reports them.
struct Sky: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the satellites in view, as gpsd reports them.",
        discussion: """
            Reads gpsd's SKY reports (the configuration's gpsd, default localhost:2947, or --gpsd), or \
            locationd's receiver's with --socket or when no gpsd option is given and locationd answers on its \
            default socket (as watch does), and shows \
            each satellite's number (PRN), system (GP GPS, GL GLONASS, GA Galileo, BD BeiDou, QZ QZSS, SB \
            SBAS, IR NavIC), elevation, azimuth, signal strength and whether the fix uses it. On a terminal \
            the view is redrawn in place at each report, as cgps does; otherwise each view is printed after \
            the last, separated by an empty line. --format json writes one line per view. Ends after --count \
            views, or on Ctrl-C (exit 130). gpsd sends SKY reports only for a receiver that reports its \
            satellites (NMEA GSV, or its own binary messages): while none comes, a line on standard error \
            says so, and the view waits. When gpsd goes away or sends nothing for --gpsd-watchdog seconds, \
            a line on standard error says so and the view reconnects (--gpsd-reconnect-delay, \
            --gpsd-max-reconnect-delay), as watch does. Exits 69 when gpsd cannot be reached at the start \
            or answers the watch with an error.
            """)

    @OptionGroup var gpsdOptions: GPSDOptions

    @Option(help: ArgumentHelp("Show the satellites of locationd's receiver, from this control socket.", valueName: "PATH"))
    var socket: String?

    @Option(name: .customLong("config"), help: ArgumentHelp("YAML configuration file, for gpsd's address (default $XDG_CONFIG_HOME/locationd/locationd.yaml if it exists).", valueName: "PATH"))
    var config: String?

    @Option(name: .customLong("count"), parsing: .unconditional, help: ArgumentHelp("Stop after this many views (\(Watch.countRange)).", valueName: "N"))
    var countArgument: NumberArgument?

    @Option(help: ReportFormat.help)
    var format: ReportFormat = .text

    func validate() throws {
        if socket != nil, gpsdOptions.isSet {
            throw ValidationError("--socket reads locationd; it cannot be combined with gpsd options (--gpsd, --device, --gpsd-*)")
        }
        do { _ = try countArgument?.integer(in: Watch.countRange, for: "--count") } catch { throw ValidationError(error.message) }
    }

    private enum Outcome: Sendable {
        case done
        case failed(CommandFailure)
        case interrupted(UnixSignal)
    }

    func run() async throws {
        try await runReportingFailures {
            signal(SIGPIPE, SIG_IGN)
            let count = try countArgument?.integer(in: Watch.countRange, for: "--count")
            var settings = try await CommandSettings.load(config: config)
            try gpsdOptions.apply(to: &settings)
            let redraws = format == .text && isatty(STDOUT_FILENO) == 1
            let outage: @Sendable (String) -> Void = { reason in
                EventWriter.writeToStandardError("── \(reason); reconnecting\n")
            }
            // As watch: --socket, or (with no gpsd option) a locationd that answers on its default sockets.
            var daemonSocket = socket
            if daemonSocket == nil, !gpsdOptions.isSet {
                daemonSocket = ControlSocketChoice.resolve(flag: nil, settings: settings).candidates.first { (try? ControlClient(path: $0)) != nil }
            }
            let views: AsyncThrowingStream<SkyView, any Error>
            let origin: String
            if let daemonSocket {
                views = DaemonSkyViews.views(socket: daemonSocket, outage: outage)
                origin = "locationd at \(daemonSocket)"
            } else {
                let configuration = settings.gpsdConfiguration
                views = GPSDSkyWatch(configuration: configuration).views { outage($0.message) }
                origin = "gpsd at \(configuration.endpoint)"
            }
            let interrupts = await Interrupts.install()
            let format = format
            let chosenSocket = daemonSocket
            let outcome = await withTaskGroup(of: Outcome.self) { group in
                group.addTask { await Self.show(views, from: origin, socket: chosenSocket, format: format, redraws: redraws, count: count) }
                group.addTask {
                    for await signal in interrupts { return .interrupted(signal) }
                    return .interrupted(.sigterm)
                }
                let first = await group.next() ?? .done
                group.cancelAll()
                return first
            }
            switch outcome {
            case .done: break
            case .failed(let failure): throw failure
            case .interrupted(let signal): throw CommandFailure.interrupted(by: signal)
            }
        }
    }

    /// Writes each view as it comes, until `count` views, the end of the output, or a failure.
    private static func show(
        _ views: AsyncThrowingStream<SkyView, any Error>, from origin: String, socket: String?, format: ReportFormat, redraws: Bool, count: Int?
    ) async -> Outcome {
        var shown = 0
        // A receiver that does not report its satellites (NMEA without GSV) makes gpsd send no SKY at all,
        // while its fixes keep the connection alive: said once, rather than a silent screen.
        let notice = Task {
            try? await Task.sleep(for: .seconds(5))
            guard !Task.isCancelled else { return }
            EventWriter.writeToStandardError(
                "── no SKY report from \(origin) yet: its receiver has not reported its satellites (NMEA GSV, or its own messages); still waiting\n")
        }
        defer { notice.cancel() }
        do {
            for try await view in views {
                notice.cancel()
                let text: String
                switch format {
                case .json: text = SkyViewText.jsonLine(view) + "\n"
                case .text:
                    let lines = SkyViewText.lines(view)
                    // Home, each line over the last view's (cleared to its end), then clear below: the new view
                    // replaces the old without a blank screen in between.
                    text = redraws
                        ? "\u{1B}[H" + lines.map { $0 + "\u{1B}[K\n" }.joined() + "\u{1B}[J"
                        : (shown > 0 ? "\n" : "") + lines.joined(separator: "\n") + "\n"
                }
                if case .failure(let failure) = SystemIO.writeAll(STDOUT_FILENO, Array(text.utf8)) {
                    // A reader gone (sky | head) ends quietly; a full disk is an error.
                    return failure.errno == EPIPE ? .done : .failed(.ioError("cannot write the sky view: \(failure)"))
                }
                shown += 1
                if let count, shown >= count { return .done }
            }
            return .failed(.unavailable("\(origin) ended the stream"))
        } catch let error as ControlError {
            return .failed(DaemonClient.failure(error, socket: socket ?? "?"))
        } catch let error as LocationError {
            return .failed(error.code == .sourceUnavailable || error.code == .sourceFailed ? .unavailable(error.message) : .from(error))
        } catch {
            return .done  // cancelled: a signal ends the command
        }
    }
}
