import Foundation
import LocationControl
import LocationCore
import Logging

/// One app as `locationd`, `locationctl watch` and `locationctl replay` run it: an ``Application``, a
/// ``LocationManager`` on it, and the manager's one ordered event stream, with what says nothing new left
/// out, as they print it or send it to watchers.
///
/// The manager is created before the application launches, so that every lifecycle message, the
/// launch included, comes out of the manager's stream in its place: a state line always comes before
/// the batch that the state change flushes. The session also keeps what the commands report about the
/// run: whether the source is down and why, the error that stopped it, the last journal problem.
package final class LocationSession: Sendable {
    /// The app's lifecycle.
    package let application: Application
    /// The manager; its delegate is this session's.
    package let manager: LocationManager

    private let adapter: EventAdapter

    /// Creates the manager on a new application and launches it into `startState`.
    ///
    /// - Parameters:
    ///   - lifecycleClock: the application's clock (a replay's track time); the manager runs on real time.
    ///   - showsLaunch: whether the state lines of the launch itself (up to `startState`) are emitted; a
    ///     command printing text for people leaves them out, as they say nothing the command line did not.
    ///   - endsWithSource: whether the command ends when the source does (a replay): the suspension that
    ///     the end of the updates causes is then left out, as the command's own ending is.
    ///   - emit: receives every event shown, in order, on the manager's delivery (never concurrently): the
    ///     manager's events but the launch's states when hidden, the suspension a command's ending causes, the
    ///     accuracy policy (the state says it), a stop that a `willTerminate` already said, and the source's
    ///     states but `no-fix` (and the satellites seen while it lasts, when their count changes) and the
    ///     `has-fix` that ends it.
    /// - Throws: ``LocationError/Code/journalIO`` when the journal cannot be opened or created;
    ///   ``LocationError/Code/invalidTransition`` for a start state that cannot be reached.
    package init(
        source: any LocationSource,
        settings: ServiceConfiguration,
        startState: ApplicationState,
        lifecycleClock: any Clock<Duration> = ContinuousClock(),
        logger: Logger = Logger(label: "location.manager"),
        now: @escaping @Sendable () -> Date = { Date() },
        showsLaunch: Bool = true,
        endsWithSource: Bool = false,
        emit: @escaping @Sendable (LocationEvent) -> Void
    ) throws(LocationError) {
        application = Application(configuration: settings.applicationConfiguration, clock: lifecycleClock)
        manager = try LocationManager(
            source: source, application: application, configuration: settings.managerConfiguration, logger: logger)
        adapter = EventAdapter(
            now: now, hidingLaunchUpTo: showsLaunch ? nil : startState, endsWithSource: endsWithSource, emit: emit)
        manager.delegate = adapter
        // An app launched into the background with the background location mode is kept running by its
        // updates, as on iOS: they must be on when didEnterBackground returns, or it is suspended at once.
        if !startState.isForeground, settings.backgroundLocation { manager.startUpdatingLocation() }
        try application.transition(to: startState)
    }

    /// The app's last lifecycle event (the one that left it in its state), once it launched.
    package var lastLifecycleEvent: ApplicationEvent? { adapter.record.value.lastLifecycle }

    /// The error that made the source stop for good, if it did.
    package var sourceFailure: LocationError? { adapter.record.value.sourceFailure }

    /// The last problem with the journal (damage cut off at start, a failed write), for `status`.
    package var journalProblem: String? { adapter.record.value.journalProblem }

    /// The source's last error, for `status`.
    package var sourceProblem: String? { adapter.record.value.sourceProblem }

    /// The outage in progress, if the source is down.
    package var outage: SourceOutageTracker.Outage? { adapter.record.value.outage.outage }

    /// Yields when the source stops: ``LocationSourceStatus/ended`` (a replay reached its end) or
    /// ``LocationSourceStatus/unavailable`` after a failure.
    package var sourceStopped: AsyncStream<LocationSourceStatus> { adapter.sourceStops.stream }

    /// Before a command exits: stops updating and, when fixes are still held and `deliverHeld` is true,
    /// returns the app to the foreground so that they are delivered rather than lost. Returns once every
    /// event caused so far has been emitted.
    package func finish(deliverHeld: Bool) async {
        // Stopping the updates lets a background app be suspended; that is the command ending, not a
        // change of the app's state worth a line.
        adapter.record.withLock { $0.isFinishing = true }
        manager.stopUpdatingLocation()
        await manager.waitForPendingDeliveries()
        if deliverHeld, manager.heldCount > 0 { try? application.transition(to: .active) }
        await application.waitForPendingEvents()
        await manager.waitForPendingDeliveries()
    }
}

/// The session's delegate: turns the manager's events into lines and keeps what the session reports.
/// The session holds it; the manager holds it weakly.
private final class EventAdapter: LocationManagerDelegate {
    struct Record {
        var lastError: LocationError?
        /// The app's last lifecycle event, shown or not.
        var lastLifecycle: ApplicationEvent?
        var sourceFailure: LocationError?
        var journalProblem: String?
        var sourceProblem: String?
        var outage = SourceOutageTracker()
        /// Whether a "waiting for a fix" line was written and no fix has come since.
        var isWaiting = false
        /// The satellites in view while waiting, when known.
        var satellites: Int?
        /// Whether the command is ending (``LocationSession/finish(deliverHeld:)``, or its source ended and
        /// the command ends with it).
        var isFinishing = false
        /// While the launch's state lines are left out: the start state, whose line is the last one left out.
        var hidingLaunchUpTo: ApplicationState?
    }

    let record: Locked<Record>
    /// Whether the command ends when its source does (a replay): the suspension that the end of the
    /// updates causes is then the command ending, not news.
    private let endsWithSource: Bool
    let sourceStops = AsyncStream.makeStream(of: LocationSourceStatus.self)
    private let now: @Sendable () -> Date
    private let emit: @Sendable (LocationEvent) -> Void

    init(
        now: @escaping @Sendable () -> Date, hidingLaunchUpTo: ApplicationState?, endsWithSource: Bool,
        emit: @escaping @Sendable (LocationEvent) -> Void
    ) {
        self.endsWithSource = endsWithSource
        var record = Record()
        record.hidingLaunchUpTo = hidingLaunchUpTo
        self.record = Locked(record)
        self.now = now
        self.emit = emit
    }

    /// Passes on one manager event when it says something new, and keeps what the session reports.
    func locationManager(_ manager: LocationManager, didReceive event: LocationEvent) {
        switch event {
        case .locations, .droppedHeldLocations, .region, .motion:
            emit(event)
        case .error(let error) where error.code == .outlierRejected:
            // The receiver works: one fix was wrong, and is said so.
            emit(event)
        case .lifecycle(let message):
            record.withLock { $0.lastLifecycle = message }
            if message == .didSuspend, record.value.isFinishing { return }
            let state = message.resultingState
            let hidden = record.withLock { record -> Bool in
                guard let last = record.hidingLaunchUpTo else { return false }
                if state == last { record.hidingLaunchUpTo = nil }
                return true
            }
            if !hidden { emit(event) }
        case .applicationStopped(let reason):
            // A stop after willTerminate adds nothing: its state line said so.
            if !reason.sentWillTerminate { emit(event) }
        case .error(let error):
            record.withLock { record in
                record.lastError = error
                record.outage.error(error)
                switch error.code {
                case .journalCorrupt, .journalIO: record.journalProblem = error.message
                default: record.sourceProblem = error.description
                }
            }
            emit(event)
        case .sourceStatus(let status):
            let date = now()
            let shown = record.withLock { record -> [LocationEvent] in
                record.outage.status(status, at: date)
                if endsWithSource, status == .ended || status == .unavailable { record.isFinishing = true }
                // The manager reports a source's fatal error just before the source becomes unavailable.
                if status == .unavailable { record.sourceFailure = record.sourceFailure ?? record.lastError }
                switch status {
                case .noFix:
                    record.isWaiting = true
                    // The satellites seen before the fix was lost, when known.
                    return [event] + (record.satellites.map { [.satellitesInView($0)] } ?? [])
                case .hasFix:
                    defer { (record.isWaiting, record.satellites) = (false, nil) }
                    return record.isWaiting ? [event] : []
                default:
                    (record.isWaiting, record.satellites) = (false, nil)
                    return []
                }
            }
            for event in shown { emit(event) }
            if status == .ended || status == .unavailable { sourceStops.continuation.yield(status) }
        case .satellitesInView(let count):
            let shown = record.withLock { record -> Bool in
                guard record.satellites != count else { return false }
                record.satellites = count
                return record.isWaiting
            }
            if shown { emit(event) }
        case .accuracyPolicy:
            break
        }
    }
}
