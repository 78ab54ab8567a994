import ArgumentParser
import Foundation
import LocationControl
import LocationCore
import LocationGPSD
import LocationGPX
import LocationService
import LocationUplink
import Logging
import ServiceLifecycle
import UnixSignals

/// `locationd`: owns one location manager and the app lifecycle, and answers on a control socket.
@main
struct LocationD: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "locationd",
        abstract: "The location daemon: reads gpsd (or replays a GPX file) and answers on a control socket.",
        discussion: """
            Each setting comes from a flag, else a LOCATIOND_* environment variable, else the \
            configuration file (--config; every key is in the commented /etc/locationd/locationd.yaml an \
            install puts there, Config/locationd.yaml in the source; default \
            $XDG_CONFIG_HOME/locationd/locationd.yaml if it exists), else its default. \
            --control-group (control.group) opens the socket to a group: 0660 instead of 0600. Clients talk JSON lines on the control socket: locationctl current, \
            state, status and watch. SIGTERM, SIGINT or SIGHUP shut down gracefully, syncing the journal and \
            removing the socket; SIGPIPE, SIGUSR1, SIGUSR2 and SIGALRM are ignored. \
            With --journal, the lifecycle state is saved beside it (JOURNAL.state) on every change, so a \
            daemon restarted after a crash resumes in the state it had, still holding its fixes.
            Every number has a documented range (shown with each flag); a value outside it, in a flag, a \
            LOCATIOND_* variable or the configuration file, exits 64 naming where it came from. \
            --check-config checks all of it and exits without starting.
            Exit codes: 0 ok, also after a graceful stop on SIGTERM, SIGINT or SIGHUP (a service that \
            stopped when asked has not failed; systemd expects 0), 64 usage, 66 replay file missing, 73 \
            socket or journal cannot be created.
            """,
        version: ServiceVersion.string)

    @OptionGroup var gpsdOptions: GPSDOptions

    @Option(help: ArgumentHelp("Replay this GPX file instead of reading gpsd.", valueName: "FILE.gpx"))
    var replay: String?

    @OptionGroup(title: "Replay options") var replayOptions: ReplayOptions

    @Option(help: ArgumentHelp("The control socket (default $XDG_RUNTIME_DIR/locationd/control.sock, else /run/locationd/control.sock).", valueName: "PATH"))
    var socket: String?

    @Option(name: .customLong("control-group"), help: ArgumentHelp("Give the control socket to this group (a name or number) and make it 0660, so that its members may connect and nobody else may (default: owner-only, 0600).", valueName: "GROUP"))
    var controlGroup: String?

    @Option(name: .customLong("nmea-socket"), help: ArgumentHelp("Stream every fix as NMEA sentences (GGA, GSA, RMC) on this Unix socket, for GeoClue (nmea-socket= in geoclue.conf) and NMEA tools; the receiver runs while a reader is connected. See docs/NMEA.md.", valueName: "PATH"))
    var nmeaSocket: String?

    @Option(name: .customLong("nmea-group"), help: ArgumentHelp("Give the NMEA socket to this group (a name or number) and make it 0660, so that its members may read it: geoclue for GeoClue (default: owner-only, 0600).", valueName: "GROUP"))
    var nmeaGroup: String?

    @Option(help: ArgumentHelp("Journal held fixes to this file so a crash loses none.", valueName: "PATH"))
    var journal: String?

    @Option(help: ArgumentHelp(
        "Send the fixes to a receiver (repeatable; replaces the configuration's uplinks list): mqtt://[USER@]HOST[:PORT]/OTUSER/OTDEVICE for OwnTracks on an MQTT broker; mqtt://HOST/DEVICE?format=homeassistant for a Home Assistant device tracker (the newest fix only); http://HOST:8083/pub?format=owntracks&user=U&device=D for an OwnTracks Recorder; http://HOST:5055/?format=traccar&id=DEVICE for Traccar. OwnTracks and Traccar get every fix, from an outbox beside --journal. Keys: interval=SEC, distance=M, accuracy=M, queue=N, password-file=PATH, ca-file=PATH (mqtts://, https://), window=N (MQTT), timeout=SEC (HTTP); see docs/UPLINKS.md.",
        valueName: "URL"))
    var uplink: [String] = []

    @Option(name: .customLong("region"), parsing: .unconditionalSingleValue, help: ArgumentHelp(
        "A region the shared app default monitors (repeatable; replaces the configuration's regions list): its enter, exit and dwell events reach default's watchers; with --journal its state survives restarts. Other apps add their own with locationctl region.",
        valueName: "NAME=LAT,LON,RADIUS[,DWELL]"))
    var region: [String] = []

    @Option(help: ArgumentHelp(
        "Lifecycle state at start. Default: with --journal, the state the daemon last had (saved in JOURNAL.state), else active; given explicitly, it overrides the saved state.",
        valueName: "active|background|suspended"))
    var state: StartState?

    @OptionGroup(title: "Policy") var policyOptions: PolicyOptions

    @Flag(name: .customLong("check-config"), help: "Check the configuration, environment and flags (and that a --replay file is readable), print the result and exit: 0 if valid, else the usual code.")
    var checkConfig = false

    /// Runs the daemon; every failure is one line on standard error with its exit code.
    static func main() async {
        await CommandMain.run(Self.self)
    }

    enum StartState: String, ExpressibleByArgument, CaseIterable {
        case active, background, suspended
    }

    /// Reads a regular replay file up to its first point, so that an empty, damaged or pointless file is exit
    /// 65 at start rather than a daemon that listens with nothing to replay. (A FIFO or a device can be read
    /// only once, so it is left to the replay, which logs what it finds.)
    static func checkReplayable(_ path: String) throws(CommandFailure) {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return }
        let first: GPXPoint?
        do throws(GPXError) { first = try GPXReader(contentsOf: path).next() } catch {
            throw error.code == .io ? CommandFailure.missingInput(error.description) : CommandFailure.badData(error.description)
        }
        if first == nil { throw CommandFailure.badData("\(path): no track point, route point or waypoint to replay") }
    }

    func validate() throws {
        if replay != nil, gpsdOptions.isSet { throw ValidationError("use either --gpsd/--device or --replay, not both") }
    }

    func run() async throws {
        // A closed pipe (a client gone, a log reader gone) is an error to handle, never a reason to die;
        // SIGUSR1, SIGUSR2 and SIGALRM mean nothing to the daemon, so they must not end it either; a file
        // size limit reached is a failed write (EFBIG) to report, not SIGXFSZ killing it.
        for ignored in [SIGPIPE, SIGUSR1, SIGUSR2, SIGALRM, SIGXFSZ] { signal(ignored, SIG_IGN) }
        try await runReportingFailures {
            var settings = try await policyOptions.resolve()
            if let socket { settings.socketPath = socket }
            if let journal { settings.journalPath = journal }
            if let controlGroup { settings.controlGroup = controlGroup }
            if let nmeaSocket { settings.nmeaSocketPath = nmeaSocket }
            if let nmeaGroup { settings.nmeaGroup = nmeaGroup }
            if !uplink.isEmpty {
                settings.uplinks = uplink
                settings.uplinksPlace = "--uplink"
            }
            if !region.isEmpty {
                settings.regionTexts = region
                settings.regionsPlace = "--region"
            }
            try settings.checkRegions()
            // Each URL and the files it names checked before anything starts (--check-config too).
            var uplinkNames: [String: Int] = [:]
            for (index, text) in settings.uplinks.enumerated() {
                let place = "\(settings.uplinksPlace) \(index + 1)"
                do throws(LocationError) {
                    let endpoint = try UplinkEndpoint(parsing: text, place: place)
                    try endpoint.checkFiles()
                    if let first = uplinkNames.updateValue(index + 1, forKey: endpoint.sameReceiverKey) {
                        throw LocationError(.invalidConfiguration, "\(place): the same uplink as \(settings.uplinksPlace) \(first) (one uplink per receiver, user and device); give it once")
                    }
                } catch { throw CommandFailure.usage(error.message) }
            }
            try gpsdOptions.apply(to: &settings)
            do throws(LocationError) { try settings.validate() } catch { throw CommandFailure.usage(error.message) }
            let controlGroup = try ControlGroup.id(settings.controlGroup)
            let nmeaGroup = try ControlGroup.id(settings.nmeaGroup, for: .nmea)
            // What the start would refuse, refused now: --check-config says so too.
            do throws(ControlError) { try ControlServer.checkPlace(of: settings.socketPath, group: controlGroup) } catch {
                throw CommandFailure.cannotCreate("cannot listen on \(settings.socketPath): \(error.message)")
            }
            if let nmea = settings.nmeaSocketPath {
                do throws(ControlError) { try ControlServer.checkPlace(of: nmea, group: nmeaGroup, trustedDirectoryOnly: true) } catch {
                    throw CommandFailure.cannotCreate("cannot listen on the NMEA socket \(nmea): \(error.message)")
                }
            }
            if let journal = settings.journalPath {
                do throws(LocationError) { try AppDirectory.checkJournalDirectory(of: journal) } catch {
                    throw CommandFailure.cannotCreate(error.message)
                }
            }

            var logger = Logger(label: "locationd")
            logger.logLevel = .info
            let source: any LocationSource
            if let replay {
                try ReplayOptions.checkReadable(replay)
                if checkConfig {
                    print("locationd: the configuration is valid (replaying \(replay), socket \(settings.socketPath))")
                    return
                }
                let options = try replayOptions.sourceOptions()
                try Self.checkReplayable(replay)
                do throws(LocationError) {
                    source = try GPXReplaySource(path: replay, options: options)
                } catch {
                    throw CommandFailure.usage(error.message)
                }
            } else {
                if checkConfig {
                    print("locationd: the configuration is valid (gpsd \(settings.gpsdHost):\(settings.gpsdPort), socket \(settings.socketPath))")
                    return
                }
                do throws(LocationError) {
                    source = try GPSDLocationSource(configuration: settings.gpsdConfiguration)
                } catch { throw CommandFailure.usage(error.message) }
            }
            let daemon = try LocationDaemon(
                source: source, settings: settings, explicitState: state.flatMap { ApplicationState(rawValue: $0.rawValue) },
                logger: logger)
            // SIGHUP (a closed terminal, or `kill -HUP` out of habit) shuts down as gracefully as SIGTERM:
            // the journal synced, the socket removed.
            let group = ServiceGroup(services: [daemon], gracefulShutdownSignals: [.sigterm, .sigint, .sighup], logger: logger)
            try await group.run()
        }
    }
}
