import ArgumentParser
import Foundation
import LocationControl
import LocationCore
import LocationGPSD
import LocationService
import UnixSignals

/// `locationctl watch`: live locations from gpsd, or locationd's event stream.
struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print live locations from gpsd or from locationd.",
        discussion: """
            With --gpsd (default localhost:2947) a location manager reads gpsd directly, under the high \
            policy or, with --policy reduced, as a background app. With --socket, or when no gpsd option is \
            given and locationd answers on its default socket (as for current), it prints locationd's \
            event stream. Ends after --count locations, after --duration seconds (exit 0 either way), or \
            on a signal: 130 after SIGINT (Ctrl-C), 143 after SIGTERM, 129 after SIGHUP, so that a script \
            can tell an interrupted watch from a finished one; a GPX output is completed in every case. \
            In text, locations go to standard output and state, batch, source and error lines to standard \
            error (watch --count 1 > pos.txt writes one line); JSON lines carry every event on standard \
            output. Exits 69 when gpsd or locationd cannot be reached.
            """)

    @OptionGroup var gpsdOptions: GPSDOptions

    @Option(help: ArgumentHelp("Print locationd's events from this control socket.", valueName: "PATH"))
    var socket: String?

    @Option(help: ArgumentHelp("Watch this app's events in locationd (its own state, policy and held fixes). Without it: the app every client shares, named default.", valueName: "NAME"))
    var app: String?

    @Option(name: .customLong("count"), parsing: .unconditional, help: ArgumentHelp("Stop after this many locations (\(Watch.countRange)).", valueName: "N"))
    var countArgument: NumberArgument?

    @Option(name: .customLong("duration"), parsing: .unconditional, help: ArgumentHelp("Stop after this many seconds (\(ValueRange.watchDuration)).", valueName: "SEC"))
    var durationArgument: NumberArgument?

    /// The locations `--count` may ask for.
    static let countRange = ValueRange(1...1e15, unit: "")
    /// `--count`, checked.
    private var count: Int? { get throws(CommandFailure) { try countArgument?.integer(in: Self.countRange, for: "--count") } }
    /// `--duration`, checked.
    private var duration: Duration? { get throws(CommandFailure) { try durationArgument?.duration(in: .watchDuration, for: "--duration") } }

    @Option(help: ArgumentHelp("high: foreground app; reduced: background app (with gpsd).", valueName: "high|reduced"))
    var policy: AccuracyPolicy = .high

    @Option(help: OutputFormat.help([.text, .json, .gpx, .nmea]))
    var format: OutputFormat = .text

    @Option(help: ArgumentHelp("Write to this file instead of standard output.", valueName: "FILE"))
    var output: String?

    @OptionGroup var policyOptions: PolicyOptions

    @OptionGroup(title: "Logging") var logOptions: LogOutputOptions

    @OptionGroup(title: "Regions") var regionOptions: RegionOptions

    func validate() throws {
        if !regionOptions.regions.isEmpty, socket != nil || app != nil {
            throw ValidationError("--region is evaluated by the manager that reads gpsd here; it cannot be combined with --socket or --app (for an app in locationd: locationctl region add)")
        }
        if let flag = localManagerFlag, socket != nil || app != nil {
            throw ValidationError("\(flag) applies to the manager that reads gpsd here; it cannot be combined with --socket or --app (locationd takes it from its own flags or configuration)")
        }
        if let app {
            if gpsdOptions.isSet { throw ValidationError("--app watches an app in locationd; it cannot be combined with gpsd options") }
            do throws(ControlError) { try ControlRequest.checkApp(app) } catch {
                throw ValidationError("--app: " + error.message.replacingOccurrences(of: "\"app\" ", with: ""))
            }
        }
        if socket != nil, gpsdOptions.isSet {
            throw ValidationError("--socket reads locationd; it cannot be combined with gpsd options (--gpsd, --device, --gpsd-*)")
        }
        do {
            _ = try count
            _ = try duration
        } catch { throw ValidationError(error.message) }
    }

    func run() async throws {
        try await runReportingFailures {
            signal(SIGPIPE, SIG_IGN)
            let writer: EventWriter
            let log = try logOptions.resolve(output: output)
            do throws(LocationError) { writer = try EventWriter(format: format, path: output, flushEachEvent: true, log: log) } catch {
                throw CommandFailure.openingOutput(error)
            }
            // As `current` does: with no --socket and nothing that asks for gpsd itself (a gpsd flag, the
            // reduced policy of a local manager), a daemon that answers on the default sockets is watched.
            var daemonSocket = socket
            if daemonSocket == nil { daemonSocket = try await listeningDaemon() }
            if daemonSocket == nil, app != nil {
                throw CommandFailure.unavailable("--app watches an app in locationd, and no locationd answers on the default sockets; start it, or name its socket with --socket")
            }
            // Straight from gpsd, an unreachable gpsd ends the watch (exit 69); through the daemon it is a
            // line in the stream, and the watch goes on while the daemon reconnects.
            let limits = WatchLimits(count: try count, endsWhenUnreachable: daemonSocket == nil)
            let duration = try self.duration
            // A reader that went away, or a failed write, ends the watch at once.
            let outputWatch = Task {
                for await _ in writer.stops { limits.finish(.done) }
            }
            defer { outputWatch.cancel() }
            let rotates = log.rotation != nil
            let interrupts = await Interrupts.install(hangupReopens: rotates)
            let reopening = rotates ? await Interrupts.reopenOnHangup(writer) : nil
            defer { reopening?.cancel() }
            let failure: CommandFailure?
            if let daemonSocket {
                failure = try await DaemonClient.watch(
                    socket: daemonSocket, writer: writer, limits: limits, interrupts: interrupts, duration: duration, app: app,
                    policy: try daemonPolicy())
            } else {
                let direct = try await watchGPSD(writer: writer, limits: limits, interrupts: interrupts, duration: duration)
                // Neither answered: a user who meant the daemon learns that it was looked for too.
                if let direct, direct.exitCode == 69, socket == nil, !gpsdOptions.isSet, policy == .high {
                    failure = .unavailable(direct.message + "; and no locationd answers on the default sockets (start it, or name its socket with --socket)")
                } else {
                    failure = direct
                }
            }
            do throws(EventWriter.Failure) { try writer.finish() } catch {
                if let failure = CommandFailure.from(error) { throw failure }
                return
            }
            if let failure { throw failure }
        }
    }

    /// The first default socket (LOCATIOND_SOCKET, the configuration's, the user's, the system's) on which
    /// a daemon this user may use is listening, unless the options ask for gpsd itself.
    /// Through locationd, the policy flags set the watched app's own policy; `--reduced-distance` has no
    /// per-app equivalent and is refused rather than ignored.
    private func daemonPolicy() throws(CommandFailure) -> AppPolicy? {
        if policyOptions.reducedDistance != nil {
            throw CommandFailure.usage("--reduced-distance applies to a local manager (with gpsd); locationd's apps take it from its configuration (reduced.distance)")
        }
        guard policyOptions.reducedInterval != nil || policyOptions.reducedAccuracy != nil || policyOptions.backgroundLocation != nil else {
            return nil
        }
        var policy = AppPolicy(backgroundLocation: policyOptions.backgroundLocation.map { $0 == .on })
        policy.reducedInterval = try policyOptions.reducedInterval?.value(in: .backgroundInterval, for: "--reduced-interval")
        policy.reducedAccuracy = try policyOptions.reducedAccuracy?.value(in: .distance, for: "--reduced-accuracy")
        return policy
    }

    /// The first flag given that only a manager of this process applies (motion, outliers, deferral).
    private var localManagerFlag: String? {
        if policyOptions.motion != nil { return "--motion" }
        if policyOptions.pausesWhenStationary != nil { return "--pauses-when-stationary" }
        if policyOptions.whileStationary != nil { return "--while-stationary" }
        if policyOptions.maxSpeed != nil { return "--max-speed" }
        if policyOptions.maxUpdateDelay != nil { return "--max-update-delay" }
        return nil
    }

    private func listeningDaemon() async throws -> String? {
        guard !gpsdOptions.isSet, policy == .high, regionOptions.regions.isEmpty, localManagerFlag == nil else { return nil }
        let settings = try await policyOptions.resolve()
        for candidate in ControlSocketChoice.resolve(flag: nil, settings: settings).candidates {
            if (try? ControlClient(path: candidate)) != nil { return candidate }
        }
        return nil
    }

    private func watchGPSD(
        writer: EventWriter, limits: WatchLimits, interrupts: UnixSignalsSequence, duration: Duration?
    ) async throws -> CommandFailure? {
        var settings = try await policyOptions.resolve()
        try gpsdOptions.apply(to: &settings)
        let source = try GPSDLocationSource(configuration: settings.gpsdConfiguration)
        let session = try LocationSession(
            source: source, settings: settings, startState: policy == .reduced ? .background : .active,
            showsLaunch: format == .json
        ) { event in
            limits.handle(EventFrame(event)) { writer.write($0) }
        }
        for region in try regionOptions.resolve() { session.manager.startMonitoring(region) }
        session.manager.startUpdatingLocation()
        let outcome = await limits.wait(interrupts: interrupts, duration: duration)
        // Fixes held while suspended are delivered at exit, as replay does, rather than thrown away.
        await session.finish(deliverHeld: writer.failure == nil)
        withExtendedLifetime(session) {}
        if outcome == .unreachable, let error = limits.firstError {
            return .unavailable(error.message)
        }
        if case .interrupted(let signal) = outcome { return .interrupted(by: signal) }
        return nil
    }
}

/// Counts delivered locations for `--count`, notices an unreachable source, and ends the watch.
final class WatchLimits: Sendable {
    enum Outcome: Sendable, Equatable { case done, interrupted(UnixSignal), unreachable, timedOut }

    private struct State {
        var locations = 0
        var firstError: LocationError?
        var sawData = false
        /// Whether the watch has ended (its count reached, its source unreachable): nothing more is written.
        var ended = false
    }

    private let count: Int?
    private let endsWhenUnreachable: Bool
    private let state = Locked(State())
    private let finished = AsyncStream.makeStream(of: Outcome.self)

    init(count: Int?, endsWhenUnreachable: Bool = true) {
        self.count = count
        self.endsWhenUnreachable = endsWhenUnreachable
    }

    /// The first error seen before any data, if the source was never reached.
    var firstError: LocationError? { state.withLock { $0.firstError } }

    /// Whether `--count` locations were written.
    var reachedCount: Bool { state.withLock { state in count.map { state.locations >= $0 } ?? false } }

    /// Writes the event unless the count is reached; ends the watch (after writing) when the count is
    /// reached or the source turns out to be unreachable.
    ///
    /// A held batch counts as its fixes. One from locationd that the count would cut is not written (a
    /// `batch-left` error line says so; locationd keeps it for the next watcher); one of a local session is
    /// written up to the count.
    func handle(_ frame: EventFrame, write: (LocationEvent) -> Void) {
        handle(frame) { written, _ in write(written) }
    }

    /// As ``handle(_:write:)``; `write` also learns whether the event is written as it came (`false` for a
    /// batch the count cut).
    func handle(_ frame: EventFrame, write: (LocationEvent, _ whole: Bool) -> Void) {
        var whole = true
        let event = frame.event
        let (written, outcome) = state.withLock { state -> (LocationEvent?, Outcome?) in
            guard !state.ended else { return (nil, nil) }
            let (written, outcome) = Self.limit(event, batchID: frame.batchID, count: count, endsWhenUnreachable: endsWhenUnreachable, &state, whole: &whole)
            if outcome != nil { state.ended = true }
            return (written, outcome)
        }
        if let written { write(written, whole) }
        if let outcome { finished.continuation.yield(outcome) }
    }

    /// What of `event` is written, and whether the watch ends with it.
    private static func limit(
        _ event: LocationEvent, batchID: String?, count: Int?, endsWhenUnreachable: Bool, _ state: inout State, whole: inout Bool
    ) -> (LocationEvent?, Outcome?) {
        switch event {
        case .locations(let locations, .live):
            state.sawData = true
            if let count, state.locations >= count { return (nil, nil) }
            let room = count.map { $0 - state.locations } ?? locations.count
            guard locations.count > room else {
                state.locations += locations.count
                return (event, state.locations == count ? .done : nil)
            }
            whole = false
            state.locations += room
            return (.locations(Array(locations.prefix(room)), .live), .done)
        case .locations(let locations, .held(let reason)):
            state.sawData = true
            guard let count else {
                state.locations += locations.count
                return (event, nil)
            }
            let room = count - state.locations
            guard room > 0 else { return (nil, nil) }
            guard locations.count >= room else {
                state.locations += locations.count
                return (event, nil)
            }
            guard locations.count > room else {
                state.locations = count
                return (event, .done)
            }
            whole = false
            if batchID != nil {
                // locationd keeps a batch until a consumer has had it whole: one that --count would cut is
                // left there, said once, rather than written in part and sent again to the next watcher.
                let left = LocationError(
                    LocationError.Code(rawValue: "batch-left"),
                    "a held batch of \(locations.count.counted("fix")) is more than --count \(count) leaves room for (\(room)); it stays in locationd for the next watcher (a watch without --count takes it)")
                return (.error(left), nil)
            }
            // A batch of this process's own (a local session's, at its end) is cut: nothing keeps it.
            state.locations = count
            return (.locations(Array(locations.prefix(room)), .held(reason)), .done)
        case .sourceStatus, .satellitesInView:
            // The receiver answered: the source is reachable.
            state.sawData = true
            return (event, nil)
        case .error(let error) where endsWhenUnreachable && !state.sawData && error.code == .sourceUnavailable:
            state.firstError = state.firstError ?? error
            return (nil, .unreachable)
        default:
            return (event, nil)
        }
    }

    /// Ends the watch from outside (the daemon's stream closed).
    func finish(_ outcome: Outcome) {
        finished.continuation.yield(outcome)
    }

    /// Waits for the count, an unreachable source, a signal, or the duration.
    func wait(interrupts: UnixSignalsSequence, duration: Duration?) async -> Outcome {
        await withTaskGroup(of: Outcome.self) { group in
            group.addTask {
                for await outcome in self.finished.stream { return outcome }
                return .done
            }
            group.addTask {
                for await signal in interrupts { return .interrupted(signal) }
                return .interrupted(.sigterm)
            }
            if let duration {
                group.addTask {
                    try? await Task.sleep(for: duration)
                    return .timedOut
                }
            }
            let first = await group.next() ?? .done
            group.cancelAll()
            return first
        }
    }
}
