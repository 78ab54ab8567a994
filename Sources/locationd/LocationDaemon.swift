import Foundation
import LocationCommandLine
import LocationControl
import LocationCore
import LocationService
import Logging
import ServiceLifecycle

/// The daemon: one location manager and its lifecycle, the last fix, and the control socket.
final class LocationDaemon: Service, Sendable {
    let application: Application
    let manager: LocationManager
    let settings: ServiceConfiguration
    private let recorder: ServiceEventRecorder
    private let server: Locked<ControlServer?> = Locked(nil)
    private let lastFix = Locked<(location: Location, arrived: ContinuousClock.Instant)?>(nil)
    /// The source's last error, for `status`.
    private let sourceProblem = Locked<String?>(nil)
    /// What was cut off a damaged journal at start, for `status`.
    private let journalProblem = Locked<String?>(nil)
    /// Whether the source is down, since when and why: `current` answers at once while it is.
    private let sourceOutage = Locked(SourceOutageTracker())
    /// The wall clock, for the time an outage began.
    private let now: @Sendable () -> Date
    private let logger: Logger
    private let startedAt = ContinuousClock.now
    /// A fix that arrived this recently is answered to `current` at once.
    private static let freshFixAge: Duration = .seconds(2)

    init(
        source: any LocationSource, settings: ServiceConfiguration, explicitState: ApplicationState?, logger: Logger,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws(CommandFailure) {
        self.settings = settings
        self.now = now
        self.logger = logger
        let application = Application(configuration: settings.applicationConfiguration)
        self.application = application
        let server = self.server
        let journalProblem = self.journalProblem
        let sourceOutage = self.sourceOutage
        let recorder = ServiceEventRecorder(
            application: application,
            statusChanged: { status in sourceOutage.withLock { $0.status(status, at: now()) } }
        ) { event in
            if case .error(let error) = event, error.code == .journalCorrupt || error.code == .journalIO {
                journalProblem.withLock { $0 = error.message }
            }
            if case .error(let error) = event { sourceOutage.withLock { $0.error(error) } }
            _ = server.withLock { $0 }?.broadcast(JSONLineEncoder.line(event))
        }
        self.recorder = recorder
        let lastFix = self.lastFix
        let sourceProblem = self.sourceProblem
        let observed = ObservedLocationSource(source) { event in
            switch event {
            case .location(let location): lastFix.withLock { $0 = (location, .now) }
            case .error(let error): sourceProblem.withLock { $0 = error.description }
            case .status, .satellitesInView: break
            }
        }
        let stateFile = settings.journalPath.map(LifecycleStateFile.init(journalPath:))
        let startState = stateFile.map { Self.startState(explicit: explicitState, saved: $0, logger: logger) }
            ?? explicitState ?? .active
        do {
            try application.transition(to: startState)
            manager = try LocationManager(
                source: observed, application: application, configuration: settings.managerConfiguration, logger: logger)
            try stateFile?.record(application) { error in logger.error("\(error.message)") }
        } catch {
            throw error.code == .journalIO ? .cannotCreate(error.message) : .usage(error.message)
        }
        manager.delegate = recorder
    }

    /// The state to start in: an explicit `--state` wins; else the saved state, if it is valid and belongs to
    /// this journal; else active. Says which, and why a saved record was not used.
    private static func startState(
        explicit: ApplicationState?, saved file: LifecycleStateFile, logger: Logger
    ) -> ApplicationState {
        switch file.load() {
        case .absent:
            return explicit ?? .active
        case .restored(let saved):
            if let explicit {
                if explicit != saved {
                    logger.notice("starting \(explicit.rawValue) as --state asks; the saved state was \(saved.rawValue)")
                }
                return explicit
            }
            logger.info("resuming in state \(saved.rawValue), saved in \(file.path)")
            return saved
        case .ignored(let reason):
            let state = explicit ?? .active
            logger.warning("\(reason); starting \(state.rawValue)")
            return state
        }
    }

    func run() async throws {
        let control: ControlServer
        let group = try ControlGroup.id(settings.controlGroup)
        do {
            let limits = ControlServerConfiguration(
                stallTimeout: ValueRange.duration(clampingSeconds: settings.controlStallTimeout),
                maxTotalOutputBuffer: settings.controlMaxBufferedOutput, socketGroup: group)
            control = try ControlServer(path: settings.socketPath, configuration: limits) { [weak self] request, connection in
                guard let self else { return .failure("shutting-down", "locationd is shutting down") }
                return await self.handle(request)
            }
        } catch {
            throw CommandFailure.cannotCreate("cannot listen on \(settings.socketPath): \(error.message)")
        }
        server.withLock { $0 = control }
        logger.info(
            "listening",
            metadata: [
                "socket": "\(settings.socketPath)", "source": "\(manager.source.name)",
                "state": "\(application.applicationState.rawValue)", "journal": "\(settings.journalPath ?? "none")",
            ])
        manager.startUpdatingLocation()
        try? await gracefulShutdown()
        logger.info("shutting down")
        manager.shutdown()
        await manager.waitForPendingDeliveries()
        control.stop()
        server.withLock { $0 = nil }
    }

    /// Answers one control request.
    func handle(_ request: ControlRequest) async -> ControlReply {
        switch request {
        case .current(let timeout, let accuracy):
            // A source that is down answers at once with its own reason, rather than after the timeout.
            if let outage = sourceOutage.value.outage {
                return .failure(LocationError(.sourceUnavailable, outage.message(source: manager.source.name)))
            }
            // A replay that has ended keeps its last fix: asking the manager would start it again from
            // its first point.
            if manager.sourceStatus == .ended {
                guard let (location, _) = lastFix.value else {
                    return .failure(LocationError(.noFix, "\(manager.source.name) ended before any fix"))
                }
                return .location(location)
            }
            if let (location, arrived) = lastFix.value, ContinuousClock.now - arrived <= Self.freshFixAge,
                AcquisitionSelector.meets(location, accuracy)
            {
                return .location(location)
            }
            do {
                let location = try await manager.requestLocation(timeout: timeout ?? .seconds(30), desiredAccuracy: accuracy)
                return .location(location)
            } catch {
                return .failure(error)
            }
        case .state(let target):
            if let target {
                guard let state = ApplicationState(rawValue: target), state != .notRunning else {
                    return .failure("bad-request", "'\(target)' is not a state; use active, inactive, background or suspended")
                }
                do { try application.transition(to: state) } catch { return .failure(error) }
                await application.waitForPendingEvents()
                await manager.waitForPendingDeliveries()
            }
            let state = application.applicationState
            return .state(state, executingInBackground: application.executingInBackground,
                          policy: ServiceEvent.policy(for: state))
        case .status:
            return .status(currentStatus())
        case .watch:
            let state = application.applicationState
            var first = [JSONLineEncoder.line(.state(state))]
            // A new watcher learns at once why no fix may come, rather than facing a blank screen.
            if let outage = sourceOutage.value.outage {
                first.append(JSONLineEncoder.line(.error(LocationError(.sourceUnavailable, outage.message(source: manager.source.name)))))
            } else if manager.sourceStatus == .ended {
                first.append(JSONLineEncoder.line(.source(.ended, satellitesVisible: nil)))
            }
            return .watching(then: first)
        }
    }

    private func currentStatus() -> DaemonStatus {
        let fix = lastFix.value
        let state = application.applicationState
        let outage = sourceOutage.value.outage
        return DaemonStatus(
            state: state, executingInBackground: application.executingInBackground,
            policy: ServiceEvent.policy(for: state), source: manager.source.name, sourceStatus: manager.sourceStatus,
            lastFix: fix?.location, lastFixAge: fix.map { (ContinuousClock.now - $0.arrived).seconds },
            held: manager.heldCount, unjournaled: manager.unjournaledCount, dropped: manager.droppedCount,
            journal: manager.journalPath,
            watchers: server.withLock { $0 }?.watcherCount ?? 0, uptime: (ContinuousClock.now - startedAt).seconds,
            journalProblem: journalProblem.value, sourceProblem: sourceProblem.value,
            sourceDownSince: outage.map { RFC3339.string(from: $0.since) }, sourceDownReason: outage?.reason?.message)
    }
}
