import Foundation
import LocationControl
import LocationCore
import LocationService
import Logging
import ServiceLifecycle

/// The daemon: one app session (its lifecycle and location manager) and the control socket.
final class LocationDaemon: Service, Sendable {
    let session: LocationSession
    var application: Application { session.application }
    var manager: LocationManager { session.manager }
    let settings: ServiceConfiguration
    private let server: Locked<ControlServer?> = Locked(nil)
    private let logger: Logger
    private let startedAt = ContinuousClock.now
    /// A fix that arrived this recently is answered to `current` at once.
    private static let freshFixAge: Duration = .seconds(2)

    init(
        source: any LocationSource, settings: ServiceConfiguration, explicitState: ApplicationState?, logger: Logger,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws(CommandFailure) {
        self.settings = settings
        self.logger = logger
        let server = self.server
        let stateFile = settings.journalPath.map(LifecycleStateFile.init(journalPath:))
        let startState = stateFile.map { Self.startState(explicit: explicitState, saved: $0, logger: logger) }
            ?? explicitState ?? .active
        do {
            session = try LocationSession(
                source: source, settings: settings, startState: startState, logger: logger, now: now
            ) { event in
                // The source's problems (gpsd's outages and bad data, a damaged point in a replay) go to
                // the log as well as to watchers, one line each; the manager logs the journal's itself.
                if case .error(let error) = event, error.code != .journalIO, error.code != .journalCorrupt {
                    logger.warning("\(error.description)")
                }
                // Every state the app reaches is saved, so that a restart resumes it.
                if case .state(let state) = event {
                    stateFile?.note(state) { error in logger.error("\(error.message)") }
                }
                _ = server.withLock { $0 }?.broadcast(JSONLineEncoder.line(event))
            }
            // Whatever the launch saved, the first record must be written, or the daemon does not start.
            try stateFile?.save(session.application.applicationState)
        } catch {
            throw error.code == .journalIO ? .cannotCreate(error.message) : .usage(error.message)
        }
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
        do {
            let limits = ControlServerConfiguration(
                stallTimeout: ValueRange.duration(clampingSeconds: settings.controlStallTimeout),
                maxTotalOutputBuffer: settings.controlMaxBufferedOutput)
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
            if let outage = session.outage {
                return .failure(LocationError(.sourceUnavailable, outage.message(source: manager.source.name)))
            }
            // The manager's last fix is after the policy: coarsened while the app runs in the background.
            // A replay that has ended keeps its last fix: asking the manager would start it again from
            // its first point.
            if manager.sourceStatus == .ended {
                guard let location = manager.location else {
                    return .failure(LocationError(.noFix, "\(manager.source.name) ended before any fix"))
                }
                return .location(location)
            }
            if let (location, age) = manager.locationWithAge, age <= Self.freshFixAge,
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
                          policy: manager.accuracyPolicy)
        case .status:
            return .status(currentStatus())
        case .watch:
            let state = application.applicationState
            var first = [JSONLineEncoder.line(.state(state))]
            // A new watcher learns at once why no fix may come, rather than facing a blank screen.
            if let outage = session.outage {
                first.append(JSONLineEncoder.line(.error(LocationError(.sourceUnavailable, outage.message(source: manager.source.name)))))
            } else if manager.sourceStatus == .ended {
                first.append(JSONLineEncoder.line(.source(.ended, satellitesVisible: nil)))
            }
            return .watching(then: first)
        }
    }

    private func currentStatus() -> DaemonStatus {
        let fix = manager.locationWithAge
        let state = application.applicationState
        let outage = session.outage
        return DaemonStatus(
            state: state, executingInBackground: application.executingInBackground,
            policy: manager.accuracyPolicy, source: manager.source.name, sourceStatus: manager.sourceStatus,
            lastFix: fix?.location, lastFixAge: fix.map { $0.age.seconds },
            held: manager.heldCount, unjournaled: manager.unjournaledCount, dropped: manager.droppedCount,
            journal: manager.journalPath,
            watchers: server.withLock { $0 }?.watcherCount ?? 0, uptime: (ContinuousClock.now - startedAt).seconds,
            journalProblem: session.journalProblem, sourceProblem: session.sourceProblem,
            sourceDownSince: outage.map { RFC3339.string(from: $0.since) }, sourceDownReason: outage?.reason?.message)
    }
}
