import Foundation
import Logging

/// The sequence of location deliveries: each element is exactly what the delegate got in one call.
public typealias LocationUpdates = BroadcastSequence<[Location]>

/// The sequence of everything a manager tells its app, in order (see ``LocationEvent``).
public typealias LocationEvents = BroadcastSequence<LocationEvent>

/// Reads fixes from a ``LocationSource``, applies the accuracy policy of the app's lifecycle state, and
/// tells the app through one ordered stream of ``LocationEvent``s: ``events``, and the delegate, which is
/// an adapter over the same stream.
///
/// - In the foreground the **high** policy runs the source continuously and delivers every epoch,
///   thinned only by ``distanceFilter``.
/// - In the background (``executingInBackground``) the **reduced** policy duty-cycles the source (see
///   ``ReducedAccuracyPolicy``). With ``allowsBackgroundLocationUpdates`` (the background location
///   mode) the app gets these fixes live, even when suspended, as iOS wakes a suspended app for each
///   location event. Without it, no location reaches the app from `didEnterBackground` on.
/// - Fixes that do not reach the app are **held** in a compact bounded batch (and journaled, if a journal
///   path is configured). On `willEnterForeground` the batch is delivered as one event, oldest first,
///   without duplicates, before any new live fix. A journal left by a crash is loaded at start and
///   delivered the same way when the app is next in the foreground, exactly once.
public final class LocationManager: Sendable {
    /// Where fixes come from.
    public let source: any LocationSource
    /// The lifecycle this manager follows.
    public let application: Application

    private struct Request {
        var selector: AcquisitionSelector
        var continuation: CheckedContinuation<Location, any Error>
        var timer: Task<Void, Never>?
    }

    private struct State {
        var delegate: WeakDelegate?
        var configuration: LocationManagerConfiguration
        var isUpdating = false
        /// Journal appends failed in a row (see `journal(_:_:)`).
        var journalFailures = 0
        var policy: AccuracyPolicy
        /// Whether the app runs in the background (from didEnterBackground until willEnterForeground).
        var inBackground: Bool
        /// Told once the delegate has the held fixes that came with them (``LocationSourceEvent/held(_:)``).
        var heldReceipts: [@Sendable () -> Void] = []
        /// The fix times of the held fixes last handed over, which a holder that had no word of them hands over again.
        var lastHandedOver = SortedFixTimes()
        /// The fix times of held fixes restored from this app's journal and delivered in this run: a holder
        /// that handed them to a run that was killed before the delegate had them (so it had no word) hands
        /// them over again, and they are not delivered twice. At most one batch's worth is kept.
        var deliveredFromJournal = SortedFixTimes()
        /// Whether the batch holds fixes restored from the journal rather than held in this run.
        var batchIsRestored = false
        var location: Location?
        var lastAccepted: Location?
        var context: LocationSourceContext?
        var sourceTask: Task<Void, Never>?
        var sourceGeneration = 0
        var sourceStatus: LocationSourceStatus = .idle
        var requests: [Int: Request] = [:]
        var nextRequestID = 0
        var batch: LocationBatch
        var totalDropped = 0
        var pendingErrors: [LocationError] = []
        var keepsAppRunning = false
        /// When ``location`` was received, on the manager's clock.
        var locationReceivedAt: Duration?
        /// The monitored regions, evaluated on every fix the app is given.
        var regions = RegionMonitor()
        /// The outlier gate's reference fix and rejections since.
        var gate = OutlierGate.Memory()
        /// Fixes the outlier gate rejected since the manager started.
        var rejectedOutliers = 0
        /// Whether the log has said that the regions skip fixes older than the last they saw.
        var saidRegionsSkipOldFixes = false
        /// Stationary detection, with ``LocationManagerConfiguration/motion`` set.
        var motion: MotionDetector?
        /// When the oldest deferred fix arrived (manager clock), while fixes are deferred.
        var deferredSince: Duration?
        /// The fix time of the oldest deferred fix.
        var deferredOldest: Date?
        /// Delivers the deferred fixes when their delay ends.
        var deferTimer: Task<Void, Never>?
    }

    private let state: Locked<State>
    private let delivery = SerialDelivery()
    private let eventBroadcast: Broadcast<LocationEvent>
    private let broadcast: Broadcast<[Location]>
    /// Locations that slow `updates` consumers lost: (total, whether the loss was logged yet).
    private let missedUpdates = Locked((count: 0, logged: false))
    private let clock: any Clock<Duration>
    private let timeline: Timeline
    private let journal: LocationJournal?
    private let logger: Logger
    /// Relays the application's lifecycle messages; held here, registered weakly with the application.
    private let lifecycleRelay: LifecycleRelay

    /// Creates a manager; loads the journal if one is configured and holds what it contains.
    ///
    /// - Throws: ``LocationError/Code/journalIO`` when the journal cannot be opened or created.
    ///   A damaged journal tail is not an error: it is cut off and reported to the delegate.
    public init(
        source: any LocationSource,
        application: Application = Application(),
        configuration: LocationManagerConfiguration = .init(),
        clock: any Clock<Duration> = ContinuousClock(),
        logger: Logger = Logger(label: "location.manager")
    ) throws(LocationError) {
        self.source = source
        self.application = application
        self.clock = clock
        self.timeline = Timeline(clock: clock)
        self.logger = logger
        let missedUpdates = self.missedUpdates
        let limit = configuration.updatesBufferLimit
        let noteDropped: @Sendable (Int, String) -> Void = { count, sequence in
            let first = missedUpdates.withLock { missed -> Bool in
                missed.count += count
                defer { missed.logged = true }
                return !missed.logged
            }
            if first {
                logger.warning(
                    "a consumer of \(sequence) fell more than \(limit) elements behind; its oldest are dropped and counted in missedUpdateCount")
            }
        }
        self.broadcast = Broadcast(bufferLimit: limit) { noteDropped($0.count, "updates") }
        self.eventBroadcast = Broadcast(bufferLimit: limit) { dropped in
            if case .locations(let locations, _) = dropped { noteDropped(locations.count, "events") }
        }
        let appState = application.applicationState
        var initial = State(
            configuration: configuration,
            policy: appState == .background || appState == .suspended ? .reduced : .high,
            inBackground: appState == .background || appState == .suspended,
            batch: LocationBatch(capacity: configuration.batchCapacity))
        initial.motion = configuration.motion.map { MotionDetector(configuration: $0) }
        if let path = configuration.journalPath {
            // A large journal (or a damaged one with a long tail) takes a while to scan: say so first.
            if let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int, size > 64 << 20 {
                logger.info("reading journal \(path) (\(size >> 20) MiB)")
            }
            // Straight into the compact batch, so that memory is bounded by its capacity, not the file.
            var batch = initial.batch
            let opened = try LocationJournal.open(
                path: path, syncInterval: configuration.journalSyncInterval, clock: clock
            ) { batch.append($0) }
            initial.batch = batch
            initial.batchIsRestored = !batch.isEmpty
            journal = opened.journal
            if let problem = opened.summary.problem {
                logger.warning("\(problem.message)")
                initial.pendingErrors.append(problem)
            }
            if opened.summary.count > batch.count {
                logger.warning(
                    "loaded \(opened.summary.count.counted("held fix")) from journal \(path); the batch holds \(batch.capacity), so the oldest \(opened.summary.count - batch.count) are dropped")
            } else if opened.summary.count > 0 {
                logger.info("loaded \(opened.summary.count.counted("held fix")) from journal \(path)")
            }
        } else {
            journal = nil
        }
        state = Locked(initial)
        lifecycleRelay = LifecycleRelay()
        // `unowned` rather than `weak`, which costs a side-table load per fix: the handler only runs inside
        // `delivery.drain()`, and only this manager's own methods drain, so the manager is alive then.
        delivery.setEventHandler { [unowned self, broadcast, eventBroadcast] event in
            if let delegate = self.delegate {
                delegate.locationManager(self, didReceive: event)
            }
            eventBroadcast.yield(event)
            if case .locations(let locations, _) = event { broadcast.yield(locations) }
        }
        lifecycleRelay.manager = self
        application.addObserver(lifecycleRelay)
    }

    deinit {
        application.removeObserver(lifecycleRelay)
        let leftovers = state.withLock { state -> [Request] in
            state.sourceTask?.cancel()
            defer { state.requests.removeAll() }
            return Array(state.requests.values)
        }
        for request in leftovers {
            request.timer?.cancel()
            request.continuation.resume(throwing: LocationError(.cancelled, "the location manager went away"))
        }
        broadcast.finish()
        eventBroadcast.finish()
    }

    // MARK: - Properties

    /// Receives locations and news; held weakly. Errors found before it was set (such as a damaged
    /// journal) are delivered to it when it is set.
    public var delegate: (any LocationManagerDelegate)? {
        get { state.withLock { $0.delegate?.value } }
        set {
            let pending = state.withLock { state -> [LocationError] in
                state.delegate = newValue.map(WeakDelegate.init)
                guard newValue != nil else { return [] }
                defer { state.pendingErrors.removeAll() }
                return state.pendingErrors
            }
            for error in pending { enqueueError(error) }
            delivery.drain()
        }
    }

    /// Every event from the moment iteration begins, in the order it happened, for any number of
    /// consumers: the same events the delegate gets, in the same order. Iteration ends when the source
    /// runs out (a replay reached its end) or the manager goes away.
    ///
    /// Each consumer has its own buffer of at most ``LocationManagerConfiguration/updatesBufferLimit``
    /// events, so a consumer that stops reading cannot make memory grow without bound: when it falls
    /// further behind, its oldest events are dropped and their locations counted in
    /// ``missedUpdateCount``. The delegate is never skipped.
    public var events: LocationEvents { BroadcastSequence(eventBroadcast) }

    /// Only the locations of ``events``: each element is what one `didUpdateLocations` call carried, held
    /// batch or live fix. Buffered like ``events``.
    public var updates: LocationUpdates { BroadcastSequence(broadcast) }

    /// How many locations consumers of ``events`` and ``updates`` lost because they fell more than
    /// ``LocationManagerConfiguration/updatesBufferLimit`` elements behind, summed over consumers.
    public var missedUpdateCount: Int { missedUpdates.value.count }

    /// The accuracy ``requestLocation(timeout:)`` waits for, in metres; `nil` takes the first fix.
    public var desiredAccuracy: Double? {
        get { state.withLock { $0.configuration.desiredAccuracy } }
        set { state.withLock { $0.configuration.desiredAccuracy = newValue } }
    }

    /// Minimum distance in metres between delivered fixes; `nil` delivers every epoch.
    public var distanceFilter: Double? {
        get { state.withLock { $0.configuration.distanceFilter } }
        set { state.withLock { $0.configuration.distanceFilter = newValue } }
    }

    /// The background location mode: whether a background (or suspended) app gets its reduced fixes live
    /// and is kept running while updating, rather than having them held for the foreground.
    public var allowsBackgroundLocationUpdates: Bool {
        get { state.withLock { $0.configuration.allowsBackgroundLocationUpdates } }
        set {
            state.withLock { $0.configuration.allowsBackgroundLocationUpdates = newValue }
            updateKeepAlive()
            delivery.drain()
        }
    }

    /// The background policy's parameters; a change applies from the next acquisition.
    public var reducedPolicy: ReducedAccuracyPolicy {
        get { state.withLock { $0.configuration.reduced } }
        set {
            state.withLock { state in
                state.configuration.reduced = newValue
                applySourceMode(&state)
            }
        }
    }

    /// The configuration as it stands now, including changes made through the properties.
    public var configuration: LocationManagerConfiguration { state.withLock { $0.configuration } }

    /// Whether the app runs in the background (from didEnterBackground until willEnterForeground).
    public var executingInBackground: Bool { application.executingInBackground }

    /// The policy in effect.
    public var accuracyPolicy: AccuracyPolicy { state.withLock { $0.policy } }

    /// The most recent fix, after the policy's processing (coarsening), whether or not it was delivered.
    public var location: Location? { state.withLock { $0.location } }

    /// ``location`` and how long ago it was received, on the manager's clock.
    package var locationWithAge: (location: Location, age: Duration)? {
        let now = timeline.now
        return state.withLock { state in
            guard let location = state.location, let at = state.locationReceivedAt else { return nil }
            return (location, now - at)
        }
    }

    /// Whether ``startUpdatingLocation()`` is in effect.
    public var isUpdatingLocation: Bool { state.withLock { $0.isUpdating } }

    /// The source's last reported state.
    public var sourceStatus: LocationSourceStatus { state.withLock { $0.sourceStatus } }

    /// How many fixes are held for the next foreground.
    public var heldCount: Int { state.withLock { $0.batch.count } }

    // MARK: - Regions

    /// Starts monitoring `region` (replacing one of the same identifier) in `state`: `unknown`, or as assumed
    /// (as `CLMonitor.add(_:identifier:assuming:)`). Its events come as ``LocationEvent/region(_:)``, each
    /// after the locations event that carried the fix that caused it, in fix-time order: live fixes as they
    /// come, a held batch when it is delivered (each transition at its own fix).
    public func startMonitoring(_ region: CircularRegion, assuming state: RegionState = .unknown) {
        self.state.withLock { $0.regions.add(region, assuming: state) }
    }

    /// Stops monitoring the region `identifier`; whether it was monitored.
    @discardableResult
    public func stopMonitoring(_ identifier: String) -> Bool {
        state.withLock { $0.regions.remove(identifier) }
    }

    /// The regions monitored and their states, to save and to restore with ``restoreRegions(_:)`` after a
    /// restart (the daemon keeps them per app).
    public var regionSnapshot: RegionMonitor.Snapshot { state.withLock { $0.regions.snapshot } }

    /// Replaces the monitored regions with `snapshot`'s, in the states it holds (a stay inside keeps its start,
    /// so a dwell still comes at its time).
    public func restoreRegions(_ snapshot: RegionMonitor.Snapshot) {
        state.withLock { $0.regions = RegionMonitor(snapshot: snapshot, configuration: $0.regions.configuration) }
    }

    /// How many regions are monitored.
    public var regionCount: Int { state.withLock { $0.regions.count } }

    /// The state of the region `identifier`, or `nil` when it is not monitored.
    public func regionState(of identifier: String) -> RegionState? {
        state.withLock { $0.regions.state(of: identifier) }
    }

    /// Queues `locations` for the app (through the motion detector, when there is one), then the motion and
    /// region events they cause.
    private func deliver(_ locations: [Location], _ kind: LocationDelivery, _ state: inout State) {
        var delivered = locations
        var changes: [MotionEvent] = []
        if state.motion != nil { (delivered, changes) = detectMotion(locations, kind, &state) }
        if !delivered.isEmpty { delivery.enqueue(event: .locations(delivered, kind)) }
        for change in changes { delivery.enqueue(event: .motion(change)) }
        guard state.regions.count > 0, let newest = delivered.last else { return }
        if !state.saidRegionsSkipOldFixes, let last = state.regions.lastEvaluatedFixTime, newest.timestamp <= last,
            last.timeIntervalSince(newest.timestamp) < RegionMonitor.lateFixWindow
        {
            // Once: a replay started again from its beginning, or a region state restored from a later run.
            state.saidRegionsSkipOldFixes = true
            logger.notice(
                "regions: these fixes are no newer than the last the regions saw (\(RFC3339.string(from: last))); fixes up to a day older change no region, so that fixes delivered again are never counted twice")
        }
        for event in state.regions.evaluate(delivered) { delivery.enqueue(event: .region(event)) }
    }

    /// Runs `locations` through the motion detector: what is delivered of them (while still, at the stop's
    /// centroid, or nothing), and the changes they decided.
    private func detectMotion(_ locations: [Location], _ kind: LocationDelivery, _ state: inout State) -> ([Location], [MotionEvent]) {
        guard var detector = state.motion else { return (locations, []) }
        var delivered: [Location] = []
        var changes: [MotionEvent] = []
        defer {
            state.motion = detector
            // The receiver rests while still, and works again once it moved.
            if state.configuration.pausesWhenStationary, !changes.isEmpty { applySourceMode(&state) }
        }
        delivered.reserveCapacity(locations.count)
        let pausing = state.configuration.pausesWhenStationary && detector.state == .stationary
        for location in locations {
            let change = detector.evaluate(location, sparse: pausing && (kind == .live || kind == .held(.deferred)))
            var fix = location
            if detector.state == .stationary, let centroid = detector.centroid {
                // At the stop, standing: a speed made of noisy positions would say otherwise.
                fix.latitude = centroid.latitude
                fix.longitude = centroid.longitude
                if fix.speed != nil { fix.speed = 0 }
                fix.course = nil
                fix.courseAccuracy = nil
            }
            if let change { changes.append(MotionEvent(state: change, location: fix)) }
            if detector.state == .stationary, change == nil, state.configuration.whileStationary == .nothing { continue }
            delivered.append(fix)
        }
        return (delivered, changes)
    }

    /// Whether the receiver stands still, as the motion detector says; `nil` without detection.
    public var motionState: MotionState? { state.withLock { $0.motion?.state } }

    /// How many fixes the outlier gate rejected since the manager started.
    public var rejectedOutlierCount: Int { state.withLock { $0.rejectedOutliers } }

    /// Delivers the deferred fixes now, as one `.held(.deferred)` event (nothing when none wait, or while
    /// the app's fixes are held for the foreground).
    public func flush() {
        state.withLock { state in
            guard !isHolding(state), !state.batch.isEmpty else { return }
            flushDeferred(&state)
        }
        delivery.drain()
    }

    /// Delivers deferred fixes that wait, if any (updates stop, or the source ended).
    private func flushDeferredIfAny(_ state: inout State) {
        guard state.deferredSince != nil, !isHolding(state), !state.batch.isEmpty else { return }
        flushDeferred(&state)
    }

    private func flushDeferred(_ state: inout State) {
        state.deferredSince = nil
        state.deferredOldest = nil
        state.deferTimer?.cancel()
        state.deferTimer = nil
        flush(&state, reason: state.batchIsRestored ? .restored : .deferred)
    }

    /// Keeps `fix` for a deferred delivery, delivering what waits once the oldest has waited the delay.
    private func deferDelivery(_ fix: Location, delay: Duration, _ state: inout State) {
        // A paused receiver's checks are far apart: each is delivered at once, so that one that has moved
        // resumes the receiver now, not a delay later.
        if state.configuration.pausesWhenStationary, state.motion?.state == .stationary {
            state.batch.append(fix)
            journal(fix, &state)
            flushDeferred(&state)
            return
        }
        let oldest = state.batch.isEmpty ? fix.timestamp : state.deferredOldest ?? fix.timestamp
        if state.batch.isEmpty { state.deferredOldest = fix.timestamp }
        state.batch.append(fix)
        journal(fix, &state)
        let now = timeline.now
        // Counted on the manager's clock, and in fix time (a replay faster than real time defers as the
        // receiver would have).
        if fix.timestamp.timeIntervalSince(oldest) >= delay.seconds {
            flushDeferred(&state)
            return
        }
        guard let since = state.deferredSince else {
            state.deferredSince = now
            let deadline = now + delay
            let timeline = self.timeline
            state.deferTimer = Task { [weak self] in
                do { try await timeline.sleep(until: deadline) } catch { return }
                self?.deferralEnded(since: now)
            }
            return
        }
        if now - since >= delay { flushDeferred(&state) }
    }

    /// The delay of the deferral that began at `since` ended.
    private func deferralEnded(since: Duration) {
        state.withLock { state in
            guard state.deferredSince == since, !isHolding(state), !state.batch.isEmpty else { return }
            flushDeferred(&state)
        }
        delivery.drain()
    }

    /// The held fixes, oldest first (a copy; for tests and diagnostics).
    package var heldLocations: [Location] { state.withLock { $0.batch.peek() } }

    /// How many held fixes were dropped for lack of room since the manager started.
    public var droppedCount: Int { state.withLock { $0.totalDropped + $0.batch.droppedCount } }

    /// The journal file, if one is configured.
    public var journalPath: String? { journal?.path }

    // MARK: - Control

    /// Starts delivering locations under the current policy.
    public func startUpdatingLocation() {
        state.withLock { state in
            state.isUpdating = true
            applySourceMode(&state)
        }
        updateKeepAlive()
        delivery.drain()
    }

    /// Stops delivering locations; the source stops unless a ``requestLocation(timeout:)`` is pending.
    /// Held fixes stay held.
    public func stopUpdatingLocation() {
        state.withLock { state in
            state.isUpdating = false
            applySourceMode(&state)
            flushDeferredIfAny(&state)
        }
        updateKeepAlive()
        delivery.drain()
    }

    /// Gets one fix: the first that meets ``desiredAccuracy``, else the best seen when `timeout` ends.
    ///
    /// The source runs continuously while the request is pending, whatever the policy; the fix is
    /// processed by the policy in effect (coarsened in the background, as delivered fixes are). It is
    /// returned, not sent to the delegate.
    /// - Throws: ``LocationError/Code/noFix`` when no fix arrived in time; the source's error if it
    ///   failed; ``LocationError/Code/cancelled`` if the calling task was cancelled.
    public func requestLocation(timeout: Duration) async throws(LocationError) -> Location {
        try await requestLocation(timeout: timeout, desiredAccuracy: desiredAccuracy)
    }

    /// Gets one fix: the first at least `desiredAccuracy` metres accurate (any fix when `nil`), else the
    /// best seen when `timeout` ends. Otherwise as ``requestLocation(timeout:)``.
    public func requestLocation(
        timeout: Duration, desiredAccuracy: Double?
    ) async throws(LocationError) -> Location {
        let id = state.withLock { state -> Int in
            state.nextRequestID += 1
            return state.nextRequestID
        }
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    let timeline = self.timeline
                    let deadline = timeline.now + timeout
                    let registered = state.withLock { state -> Bool in
                        // Checked under the lock that `failRequest` takes: a cancellation either finds the
                        // request registered, or is seen here, so no request outlives its caller.
                        if Task.isCancelled { return false }
                        var request = Request(
                            selector: AcquisitionSelector(desiredAccuracy: desiredAccuracy),
                            continuation: continuation)
                        request.timer = Task { [weak self] in
                            do { try await timeline.sleep(until: deadline) } catch { return }
                            self?.finishRequest(id, timedOutAfter: timeout)
                        }
                        state.requests[id] = request
                        applySourceMode(&state)
                        return true
                    }
                    guard registered else {
                        continuation.resume(throwing: LocationError(.cancelled, "the location request was cancelled"))
                        return
                    }
                    delivery.drain()
                }
            } onCancel: {
                self.failRequest(id, LocationError(.cancelled, "the location request was cancelled"))
            }
        } catch let error as LocationError {
            throw error
        } catch {
            throw LocationError(.sourceFailed, "\(error)")
        }
    }

    /// Gets one fix no older than `maximumAge`: the last fix at once when it was received that recently (and
    /// meets `accuracy`), never an older one; else the first new fix that meets `accuracy`, waiting up to
    /// `timeout` (as ``requestLocation(timeout:desiredAccuracy:)``).
    ///
    /// With `accuracy`, it is a bound, not a wish: when no fix that accurate comes in time, it throws
    /// ``LocationError/Code/accuracyNotMet`` naming the best there was, rather than returning it.
    /// - Throws: ``LocationError/Code/noFix`` when no fix came at all, ``LocationError/Code/accuracyNotMet``,
    ///   the source's error if it failed, ``LocationError/Code/cancelled`` if the calling task was cancelled.
    public func requestLocation(maximumAge: Duration, timeout: Duration, accuracy: Double? = nil) async throws(LocationError) -> Location {
        // A maximum age of 0 never takes the last fix, even one received this instant.
        if maximumAge > .zero, let (location, age) = locationWithAge, age >= .zero, age <= maximumAge, AcquisitionSelector.meets(location, accuracy) {
            return location
        }
        let location = try await requestLocation(timeout: timeout, desiredAccuracy: accuracy)
        guard AcquisitionSelector.meets(location, accuracy) else {
            let best = location.horizontalAccuracy.map { String(format: "±%.1f m", $0) } ?? "of unknown accuracy"
            throw LocationError(
                .accuracyNotMet, "no fix within \(accuracy.map { String(format: "%g", $0) } ?? "?") m came in \(Self.format(timeout)); the best was \(best)")
        }
        return location
    }

    /// Requests the one-time delivery of the current location, as Core Location's `requestLocation()`.
    ///
    /// Returns at once. The fix, the first that meets ``desiredAccuracy`` or else the best seen within
    /// ``LocationManagerConfiguration/requestTimeout``, arrives as a live ``LocationEvent/locations(_:_:)``
    /// event (the delegate's `didUpdateLocations`); if none comes, a ``LocationEvent/error(_:)`` event
    /// (`didFailWithError`) says why. The source runs continuously meanwhile, whatever the policy.
    public func requestLocation() {
        let timeout = state.withLock { $0.configuration.requestTimeout }
        Task { [weak self] in
            guard let self else { return }
            do throws(LocationError) {
                let location = try await self.requestLocation(timeout: timeout)
                self.state.withLock { self.deliver([location], .live, &$0) }
            } catch {
                self.enqueueError(error)
            }
            self.delivery.drain()
        }
    }

    /// How many ``requestLocation(timeout:desiredAccuracy:)`` calls are waiting for a fix.
    package var pendingRequestCount: Int { state.withLock { $0.requests.count } }

    /// Returns once every delegate call and `updates` element caused so far has been delivered.
    ///
    /// Callbacks run on whichever thread drains the queue first; call this before acting on "everything
    /// so far has been seen", such as closing an output file.
    public func waitForPendingDeliveries() async {
        await delivery.waitUntilDelivered()
    }

    /// Stops the source and flushes the journal to disk: call before a graceful exit.
    /// Held fixes stay in the journal for the next start.
    ///
    /// When appends to the journal were failing (a full disk), one more attempt rewrites it with every held
    /// fix; if that fails too, the log says how many held fixes the next start will not have.
    public func shutdown() {
        stopUpdatingLocation()
        guard let journal else { return }
        let unwritten = state.withLock { state -> (count: Int, error: LocationError)? in
            guard state.journalFailures > 0 else { return nil }
            do throws(LocationError) {
                try journal.replaceContents(with: state.batch.peek())
                state.journalFailures = 0
                return nil
            } catch {
                return (max(0, state.batch.count - journal.count), error)
            }
        }
        if let unwritten {
            logger.error(
                "\(unwritten.count.counted("held fix", "held fixes")) \(unwritten.count == 1 ? "is" : "are") not in journal \(journal.path) and are lost with this process: \(unwritten.error.message)")
        } else if journal.count > 0 {
            logger.info("journal \(journal.path) holds \(journal.count == 1 ? "the" : "all") \(journal.count.counted("held fix")) for the next start")
        }
        journal.sync()
    }

    // MARK: - Source events

    /// Handles one event of the source run `generation`; events of a run already stopped are stale and
    /// dropped (checked under the same lock as the handling, so one lock per fix).
    private func handle(_ event: LocationSourceEvent, generation: Int) {
        var resolved: [(CheckedContinuation<Location, any Error>, Location)] = []
        state.withLock { state in
            guard state.sourceGeneration == generation else { return }
            switch event {
            case .location(let fix):
                guard fix.hasValidCoordinate else {
                    enqueueError(
                        LocationError(
                            .invalidData,
                            "\(source.name) delivered an impossible coordinate (\(fix.latitude), \(fix.longitude))"))
                    return
                }
                if let gate = state.configuration.outlierGate,
                    case .rejected(let distance, let interval) = gate.judge(fix, &state.gate)
                {
                    state.rejectedOutliers += 1
                    enqueueError(
                        LocationError(
                            .outlierRejected,
                            String(
                                format: "rejected the fix of %@: %.0f m from the last accepted one in %.1f s of fix time (faster than %g m/s, beyond both accuracies)",
                                RFC3339.string(from: fix.timestamp, fractionDigits: 3), distance, interval, gate.maximumSpeed)))
                    return
                }
                // A request answers under the policy too: a background app gets only what its policy
                // lets through (coarsened), however it asks.
                let offered = state.policy == .reduced ? state.configuration.reduced.coarsen(fix) : fix
                resolved = resolveRequests(with: offered, &state)
                accept(fix, &state)
            case .status(let status):
                guard status != state.sourceStatus else { return }
                state.sourceStatus = status
                enqueue(.sourceStatus(status))
            case .error(let error):
                enqueueError(error)
            case .satellitesInView(let count):
                guard count >= 0 else { return }
                enqueue(.satellitesInView(count))
            case .held(let handOver):
                acceptHeld(handOver, &state)
            }
        }
        delivery.drain()
        for (continuation, location) in resolved { continuation.resume(returning: location) }
        if !resolved.isEmpty {
            state.withLock { applySourceMode(&$0) }
        }
    }

    /// Runs one fix through the policy; delivers it, holds it, or filters it out.
    private func accept(_ fix: Location, _ state: inout State) {
        guard state.isUpdating else { return }
        let reduced = state.configuration.reduced
        let processed = state.policy == .reduced ? reduced.coarsen(fix) : fix
        state.location = processed
        state.locationReceivedAt = timeline.now
        if let last = state.lastAccepted {
            if processed.isDuplicate(of: last) { return }
            let filter =
                state.policy == .reduced
                ? (reduced.distanceFilter ?? state.configuration.distanceFilter)
                : state.configuration.distanceFilter
            if let filter, processed.distance(from: last) < filter { return }
        }
        state.lastAccepted = processed
        if isHolding(state) {
            state.batch.append(processed)
            journal(processed, &state)
            return
        }
        // Deferred: kept with whatever the batch holds, and delivered with it.
        if let delay = state.configuration.maximumUpdateDelay {
            deferDelivery(processed, delay: delay, &state)
            return
        }
        // Held fixes (restored from a journal while the app was already in the foreground, or held before
        // the background location mode was turned on) are older than any live fix: they go first.
        if !state.batch.isEmpty { flush(&state, reason: state.batchIsRestored ? .restored : .foreground) }
        deliver([processed], .live, &state)
    }

    /// Takes fixes that were held for the app elsewhere: into the batch while the app holds (they are
    /// delivered with it), else delivered at once as a restored batch.
    private func acceptHeld(_ handOver: HeldLocations, _ state: inout State) {
        let locations = handOver.locations
        // Handed over again (the holder had no word that they arrived): a fix already held here, or handed
        // over last time, is not taken twice. Exactly those, by fix time: a fix merely older than one
        // already delivered may never have reached the app.
        let held = state.batch.isEmpty ? SortedFixTimes() : SortedFixTimes(state.batch.peek())
        let fresh: [Location]
        if held.count == 0, state.lastHandedOver.count == 0, state.deliveredFromJournal.count == 0,
            locations.allSatisfy(\.hasValidCoordinate)
        {
            // The first hand-over of a run, with nothing held here: taken as it came, without a copy.
            fresh = locations
        } else {
            fresh = locations.filter {
                $0.hasValidCoordinate && !state.lastHandedOver.contains($0.timestamp)
                    && !state.deliveredFromJournal.contains($0.timestamp) && !held.contains($0.timestamp)
            }
        }
        state.lastHandedOver = SortedFixTimes(locations)
        // Delivered at once, nothing held here and no journal to keep them in: handed to the delegate as they
        // came, rather than encoded into the batch and decoded out of it again (a daemon's 100,000 fixes).
        if journal == nil, !isHolding(state), state.batch.isEmpty, fresh.count <= state.batch.capacity {
            if let last = fresh.last { state.location = last }
            if handOver.hasReceipt { state.heldReceipts.append(handOver.delivered) }
            flush(&state, reason: .restored, handedOver: fresh)
            return
        }
        for location in fresh {
            state.batch.append(location)
            journal(location, &state)
        }
        if let last = fresh.last { state.location = last }
        if handOver.hasReceipt { state.heldReceipts.append(handOver.delivered) }
        if !isHolding(state) { flush(&state, reason: .restored) }
    }

    /// Whether fixes are held rather than delivered: from didEnterBackground until willEnterForeground,
    /// unless the background location mode is on.
    private func isHolding(_ state: State) -> Bool {
        state.inBackground && !state.configuration.allowsBackgroundLocationUpdates
    }

    private func resolveRequests(
        with fix: Location, _ state: inout State
    ) -> [(CheckedContinuation<Location, any Error>, Location)] {
        guard !state.requests.isEmpty else { return [] }
        var resolved: [(CheckedContinuation<Location, any Error>, Location)] = []
        for id in state.requests.keys.sorted() {
            guard var request = state.requests[id] else { continue }
            if request.selector.offer(fix) {
                state.requests[id] = nil
                request.timer?.cancel()
                resolved.append((request.continuation, fix))
            } else {
                state.requests[id] = request
            }
        }
        return resolved
    }

    private func finishRequest(_ id: Int, timedOutAfter timeout: Duration) {
        let request = state.withLock { state -> Request? in
            defer { applySourceMode(&state) }
            return state.requests.removeValue(forKey: id)
        }
        guard let request else { return }
        if let best = request.selector.best {
            request.continuation.resume(returning: best)
        } else {
            request.continuation.resume(
                throwing: LocationError(
                    .noFix, "no fix from \(source.name) within \(Self.format(timeout))"))
        }
    }

    private func failRequest(_ id: Int, _ error: LocationError) {
        let request = state.withLock { state -> Request? in
            defer { applySourceMode(&state) }
            return state.requests.removeValue(forKey: id)
        }
        request?.timer?.cancel()
        request?.continuation.resume(throwing: error)
    }

    // MARK: - Running the source

    private func effectiveMode(_ state: State) -> AcquisitionMode? {
        if !state.requests.isEmpty { return .continuous }
        guard state.isUpdating else { return nil }
        let mode: AcquisitionMode = state.policy == .high ? .continuous : .dutyCycled(state.configuration.reduced.dutyCycle)
        guard state.configuration.pausesWhenStationary, state.motion?.state == .stationary else { return mode }
        // Paused: a check every so often, unless the policy already rests longer.
        let pause = DutyCycle(
            interval: state.configuration.stationaryCheckInterval,
            desiredAccuracy: state.configuration.motion?.accuracyLimit, acquisitionTimeout: .seconds(10))
        if case .dutyCycled(let cycle) = mode, cycle.interval >= pause.interval { return mode }
        return .dutyCycled(pause)
    }

    private func applySourceMode(_ state: inout State) {
        guard let mode = effectiveMode(state) else {
            if state.sourceTask != nil {
                state.sourceTask?.cancel()
                state.sourceTask = nil
                state.context = nil
                state.sourceGeneration += 1
                if state.sourceStatus != .idle {
                    state.sourceStatus = .idle
                    enqueue(.sourceStatus(.idle))
                }
            }
            return
        }
        if let context = state.context {
            context.setMode(mode)
            return
        }
        state.sourceGeneration += 1
        let generation = state.sourceGeneration
        let run = SourceRun(
            source, clock: clock, mode: mode,
            report: { [weak self] event in self?.handle(event, generation: generation) },
            ended: { [weak self] result in self?.sourceEnded(generation: generation, result: result) })
        state.context = run.context
        state.sourceTask = run.task
    }

    private func sourceEnded(generation: Int, result: Result<Void, any Error>) {
        let failure: LocationError? =
            switch result {
            case .success: nil
            case .failure(let error as LocationError): error
            case .failure(let error): LocationError(.sourceFailed, "\(source.name) failed: \(error)")
            }
        let requests = state.withLock { state -> [Request] in
            guard state.sourceGeneration == generation else { return [] }
            state.sourceTask = nil
            state.context = nil
            state.isUpdating = false
            // What a deferral kept goes before the end is told.
            flushDeferredIfAny(&state)
            if let failure { enqueueError(failure) }
            let status: LocationSourceStatus = failure == nil ? .ended : .unavailable
            if state.sourceStatus != status {
                state.sourceStatus = status
                enqueue(.sourceStatus(status))
            }
            defer { state.requests.removeAll() }
            return Array(state.requests.values)
        }
        updateKeepAlive()
        delivery.drain()
        let reason = failure ?? LocationError(.noFix, "\(source.name) ended before a fix arrived")
        for request in requests {
            request.timer?.cancel()
            if let best = request.selector.best {
                request.continuation.resume(returning: best)
            } else {
                request.continuation.resume(throwing: reason)
            }
        }
        // Consumers of `events` and `updates` learn that the stream is over; later iterations start afresh.
        delivery.enqueue { [broadcast, eventBroadcast] in
            eventBroadcast.finish(permanently: false)
            broadcast.finish(permanently: false)
        }
        delivery.drain()
    }

    // MARK: - Lifecycle

    /// Handles one lifecycle message: it goes into the event stream first, so that what it causes (a
    /// policy change, a flushed batch) follows it.
    fileprivate func handle(_ event: ApplicationEvent) {
        state.withLock { state in
            enqueue(.lifecycle(event))
            switch event {
            case .didEnterBackground:
                state.inBackground = true
                setPolicy(.reduced, &state)
            case .willEnterForeground:
                state.inBackground = false
                flush(&state, reason: state.batchIsRestored ? .restored : .foreground)
                setPolicy(.high, &state)
            case .didBecomeActive:
                // A journal restored at launch is delivered on the first foreground even without
                // willEnterForeground (an app launched straight into the foreground).
                if !state.batch.isEmpty || !state.heldReceipts.isEmpty {
                    flush(&state, reason: state.batchIsRestored ? .restored : .foreground)
                }
            case .didSuspend, .willTerminate, .didFinishLaunching, .willResignActive:
                break
            }
        }
        switch event {
        case .didSuspend, .willEnterForeground: journal?.sync()
        case .willTerminate: shutdown()
        default: break
        }
        updateKeepAlive()
        delivery.drain()
    }

    /// The app stopped. One that got willTerminate was shut down then; one purged or killed without a
    /// message stops where it is, as a killed process would: updates end, the journal keeps what is held.
    fileprivate func handleStop(_ reason: ApplicationTerminationReason) {
        state.withLock { state in
            enqueue(.applicationStopped(reason))
            if !reason.sentWillTerminate {
                state.isUpdating = false
                applySourceMode(&state)
            }
        }
        if !reason.sentWillTerminate {
            logger.notice("the app stopped (\(reason.description)); held fixes stay for its next launch")
            journal?.sync()
        }
        updateKeepAlive()
        delivery.drain()
    }

    private func setPolicy(_ policy: AccuracyPolicy, _ state: inout State) {
        guard state.policy != policy else { return }
        state.policy = policy
        applySourceMode(&state)
        enqueue(.accuracyPolicy(policy))
    }

    /// Journals one held fix. The first failure (a full disk) is one error and one log line; the fixes stay
    /// held in memory meanwhile, and the first append that works again rewrites the journal with every
    /// held fix, so that it is whole again.
    private func journal(_ fix: Location, _ state: inout State) {
        guard let journal else { return }
        do throws(LocationError) {
            if state.journalFailures > 0 {
                // A cheap append first tells whether writing works again; the rewrite then makes it whole.
                try journal.append(fix)
                try journal.replaceContents(with: state.batch.peek())
                logger.notice("journal \(journal.path) is written again after \(state.journalFailures.counted("failed append")); it holds \(journal.count == 1 ? "the" : "all") \(journal.count.counted("held fix"))")
                state.journalFailures = 0
                let replaced = journalReplaced
                delivery.enqueue { replaced.value?() }
            } else if journal.count + 1 > 2 * state.batch.capacity + 16 {
                // The batch drops its oldest fixes past its capacity; the file, appended to, would grow for as
                // long as the app stays in the background. Rewritten (atomically) with what the batch holds,
                // this fix included, rather than appended to, it never holds more than twice the capacity
                // (and 16), at the cost of one rewrite per capacity's worth of fixes.
                try journal.replaceContents(with: state.batch.peek())
                let replaced = journalReplaced
                delivery.enqueue { replaced.value?() }
            } else {
                try journal.append(fix)
            }
        } catch {
            state.journalFailures += 1
            if state.journalFailures == 1 {
                let failure = LocationError(
                    .journalIO,
                    "\(error.message); held fixes are kept in memory, and the journal is rewritten with all of them once writing works again")
                logger.error("\(failure.message)")
                enqueueError(failure)
            }
        }
    }

    /// Fixes held but not in the journal (its appends failing), or 0.
    public var unjournaledCount: Int {
        state.withLock { state in
            guard let journal, state.journalFailures > 0 else { return 0 }
            return max(0, state.batch.count - journal.count)
        }
    }

    /// Delivers the held batch as one event, then clears the journal of what was delivered.
    private func flush(_ state: inout State, reason: HeldBatchReason, handedOver: [Location] = []) {
        var (locations, dropped) = state.batch.drain()
        if state.batchIsRestored, journal != nil {
            if state.deliveredFromJournal.count + locations.count > state.batch.capacity { state.deliveredFromJournal = SortedFixTimes() }
            state.deliveredFromJournal.add(locations)
        }
        if locations.isEmpty { locations = handedOver } else { locations += handedOver }
        state.batchIsRestored = false
        state.totalDropped += dropped
        if dropped > 0 {
            logger.warning("dropped \(dropped.counted("held fix")): the batch holds at most \(state.batch.capacity)")
            enqueue(.droppedHeldLocations(dropped))
        }
        if let last = locations.last { state.lastAccepted = last }
        if !locations.isEmpty {
            deliver(locations, .held(reason), &state)
        }
        // Whoever handed over held fixes hears that the delegate has them, once it has.
        if !state.heldReceipts.isEmpty {
            let receipts = state.heldReceipts
            state.heldReceipts = []
            delivery.enqueue { for receipt in receipts { receipt() } }
        }
        guard let journal, journal.count > 0 || !locations.isEmpty else { return }
        // Clear only after the delegate has the batch; keep anything held again since the flush.
        delivery.enqueue { [weak self] in
            guard let self else { return }
            let result = self.state.withLock { state -> LocationError? in
                do throws(LocationError) {
                    // Atomically, so that a crash here never loses what was held since the flush.
                    try journal.replaceContents(with: state.batch.peek())
                    state.journalFailures = 0  // whole again
                    return nil
                } catch {
                    return error
                }
            }
            if let result {
                self.logger.error("\(result.message)")
                self.enqueueError(result)
                self.delivery.drain()
            } else {
                self.journalReplaced.value?()
            }
        }
    }

    /// Delivers the held batch now, as restored fixes, in whatever state the app is: locationd does so when
    /// an app that went away attaches again, so that the app takes back what was held for it, whatever state
    /// it comes back in. Fixes that come later are held or delivered as the state says.
    package func deliverHeldNow() {
        state.withLock { state in
            guard !state.batch.isEmpty else { return }
            flush(&state, reason: .restored)
        }
        delivery.drain()
    }

    /// Called (on the delivery queue) each time the journal file has been replaced by a new one: a record that
    /// names the journal by its inode (the daemon's lifecycle state file) must be written again.
    package func onJournalReplaced(_ hook: @escaping @Sendable () -> Void) {
        journalReplaced.withLock { $0 = hook }
    }

    private let journalReplaced = Locked<(@Sendable () -> Void)?>(nil)

    /// Called with the path of a rewritten journal, synced and about to be renamed over the journal, while
    /// the manager is locked (the hook must not call back into it): a record that names the journal by its
    /// inode must accept that file as well until ``onJournalReplaced(_:)`` says the rename is done.
    package func onJournalWillBeReplaced(_ hook: @escaping @Sendable (_ staged: String) -> Void) {
        journal?.onWillReplace(hook)
    }

    private func updateKeepAlive() {
        let (changed, keep) = state.withLock { state -> (Bool, Bool) in
            let keep = state.isUpdating && state.configuration.allowsBackgroundLocationUpdates
            defer { state.keepsAppRunning = keep }
            return (keep != state.keepsAppRunning, keep)
        }
        if changed { application.setKeepsRunning(keep, holder: ObjectIdentifier(self)) }
    }

    // MARK: - Delivery

    /// Puts an event in the one ordered queue out of the manager; it is delivered at the next drain.
    private func enqueue(_ event: LocationEvent) {
        delivery.enqueue(event: event)
    }

    private func enqueueError(_ error: LocationError) {
        enqueue(.error(error))
    }

    private static func format(_ duration: Duration) -> String {
        let seconds = duration.seconds
        return seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
    }
}

/// Hands the application's lifecycle messages to the manager, which holds it; the application holds it
/// weakly, and it holds the manager weakly, so neither keeps the other alive.
private final class LifecycleRelay: ApplicationHost {
    private let target = Locked<WeakManager?>(nil)

    var manager: LocationManager? {
        get { target.value?.value }
        set { target.withLock { $0 = newValue.map(WeakManager.init) } }
    }

    func applicationDidFinishLaunching(_ application: Application) { manager?.handle(.didFinishLaunching) }
    func applicationWillResignActive(_ application: Application) { manager?.handle(.willResignActive) }
    func applicationDidEnterBackground(_ application: Application) { manager?.handle(.didEnterBackground) }
    func applicationDidSuspend(_ application: Application) { manager?.handle(.didSuspend) }
    func applicationWillEnterForeground(_ application: Application) { manager?.handle(.willEnterForeground) }
    func applicationDidBecomeActive(_ application: Application) { manager?.handle(.didBecomeActive) }
    func applicationWillTerminate(_ application: Application) { manager?.handle(.willTerminate) }
    func application(_ application: Application, didStopWith reason: ApplicationTerminationReason) {
        manager?.handleStop(reason)
    }
}

private final class WeakManager: Sendable {
    weak let value: LocationManager?
    init(_ value: LocationManager) { self.value = value }
}

/// A weak reference to the delegate, so the manager never keeps it alive.
private final class WeakDelegate: Sendable {
    weak let value: (any LocationManagerDelegate)?

    init(_ value: any LocationManagerDelegate) {
        self.value = value
    }
}
