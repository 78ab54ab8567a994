import Foundation
import LocationCore

/// A `LocationSource` that replays a GPX file on the context's clock.
///
/// ```swift
/// let source = try GPXReplaySource(path: "commute.gpx", options: .init(pacing: .speedFactor(10), loop: true))
/// ```
///
/// Points are delivered at their recorded times (scaled by the speed factor) on
/// `LocationSourceContext/timeline`, against absolute deadlines so nothing drifts;
/// untimed points move at a constant speed along the geometry; long gaps between segments are
/// shortened; speed and course are derived when the file has none. Under
/// `AcquisitionMode/dutyCycled(_:)` the replay acquires one fix per interval of *track*
/// time and skips the rest, as a live receiver would. Every fix has `isSimulated == true` and the file
/// name as its `source`. <doc:ReplayTiming> specifies all of it.
///
/// The file is read as it plays, in constant memory. A file that turns out to be broken further on ends
/// the replay with the reader's error (file, line, column) when the replay reaches that point.
public struct GPXReplaySource: LocationSource {
    /// The GPX file.
    public let path: String
    /// How the file is played.
    public let options: Options
    private let wallClock: @Sendable () -> Date
    /// Standard input or a FIFO, copied once so that every run and loop can read it again.
    private let spool = SpooledInput()

    /// `replay <file name>`.
    public var name: String { "replay \(URL(fileURLWithPath: path).lastPathComponent)" }

    /// Creates a replay of a file.
    /// - Parameters:
    ///   - path: the GPX file; it is opened when the replay runs.
    ///   - options: how to play it.
    ///   - now: the wall-clock time, read once when the replay starts: the base of rebased timestamps and of
    ///     the synthesized times of untimed points. Inject a fixed date in tests.
    /// - Throws: `LocationError/Code/invalidConfiguration` when an option is out of range.
    public init(path: String, options: Options = Options(), now: @escaping @Sendable () -> Date = { Date() })
        throws(LocationError)
    {
        try options.validate()
        self.path = path
        self.options = options
        self.wallClock = now
    }

    /// Plays the file until it ends (returns), the task is cancelled (throws `CancellationError`), or the file
    /// fails (throws `LocationError`: `LocationError/Code/sourceUnavailable`
    /// when it cannot be read, `LocationError/Code/invalidData` when it is not valid GPX or
    /// holds nothing to play).
    public func run(_ context: LocationSourceContext) async throws {
        let origin = context.timeline.now
        let planner: ReplayPlanner
        do {
            let readPath = try spool.readablePath(for: path)
            planner = try ReplayPlanner(path: path, readPath: readPath, options: options, startDate: wallClock())
        } catch {
            throw error.locationError
        }
        let replay = ReplayRun(planner: planner, options: options, context: context, origin: origin)
        try await replay.run()
    }
}

/// One run of a replay: the schedule, the clock, and the acquisition mode. Lives in the running task only.
private final class ReplayRun {
    private let planner: ReplayPlanner
    private let context: LocationSourceContext
    private let origin: Duration
    private let factor: Double?  // nil: as fast as possible
    private let selection: GPXReplaySource.Options.Selection
    /// The next step, read from the planner only when needed (so that a fix is delivered before a broken
    /// point after it is read); see ``peek()``.
    private var pending: ReplayPlanner.Step?
    private var exhausted = false
    private var inStepBackRun = false
    private var reportedStepBack = false
    private var deliveredAny = false
    /// A duty cycle's rest was reported, and no fix since in continuous play.
    private var resting = false
    private var stepsSinceYield = 0
    /// Acquisitions in a row that found no point (see ``noteEmptyAcquisitions(_:_:)``).
    private var emptyAcquisitions: Int64 = 0

    private enum Outcome {
        case ended
        case modeChanged(AcquisitionMode)
    }

    init(planner: ReplayPlanner, options: GPXReplaySource.Options, context: LocationSourceContext, origin: Duration) {
        self.planner = planner
        self.context = context
        self.origin = origin
        self.selection = options.selection
        switch options.pacing {
        case .speedFactor(let factor): self.factor = factor
        case .asFastAsPossible: self.factor = nil
        }
    }

    func run() async throws {
        guard try peek() != nil else {
            let what = selection == .automatic
                ? "no track point, route point or waypoint to replay (its segments, routes and waypoints are all empty)"
                : "no <\(planner.kind.rawValue)> to replay"
            throw LocationError(.invalidData, "\(planner.path): \(what)")
        }
        var mode = context.mode
        while true {
            let outcome: Outcome
            switch mode {
            case .continuous: outcome = try await runContinuous()
            case .dutyCycled(let cycle): outcome = try await runDutyCycled(cycle)
            }
            switch outcome {
            case .ended:
                if emptyAcquisitions > 0 {
                    context.report(
                        .error(
                            LocationError(
                                .noFix,
                                "\(emptyAcquisitions) acquisition\(emptyAcquisitions == 1 ? "" : "s") without a point "
                                    + "before \(planner.fileName) ended")))
                }
                context.report(.status(.ended))
                return
            case .modeChanged(let next):
                mode = next
            }
        }
    }

    // MARK: - Modes

    /// Every point at its time.
    private func runContinuous() async throws -> Outcome {
        let mode = AcquisitionMode.continuous
        while let step = try peek() {
            if let changed = try await wait(until: step.trackTime, mode) { return .modeChanged(changed) }
            consume(step)
            // Back from a duty cycle's rest: the receiver has a fix again, and says so once.
            if resting {
                resting = false
                context.report(.status(.hasFix))
            }
            deliver(step.location)
        }
        return .ended
    }

    /// One acquisition per interval of track time, as `ListeningLocationSource` does on the
    /// clock: the first point meeting the accuracy goal, else the best one seen before the timeout; the
    /// points in between acquisitions are skipped.
    private func runDutyCycled(_ cycle: DutyCycle) async throws -> Outcome {
        let mode = AcquisitionMode.dutyCycled(cycle)
        var cycleStart = currentTrackTime()
        try await skip(before: cycleStart)
        while true {
            guard let next = try peek() else { return .ended }

            // Acquisitions whose window holds no point are skipped in one step, whatever the gap (a year of
            // track time is half a million one-minute intervals): counted, reported once.
            if next.trackTime >= cycleStart + cycle.acquisitionTimeout, cycle.interval > .zero {
                let whole = ((next.trackTime - cycleStart) / cycle.interval).rounded(.down)
                let cycles = Int64(Swift.max(1, Swift.min(whole, 1e15)))
                // The first empty acquisition ends at its timeout, as any acquisition does.
                if let changed = try await wait(until: cycleStart + cycle.acquisitionTimeout, mode) {
                    return .modeChanged(changed)
                }
                noteEmptyAcquisitions(cycles, cycle)
                context.report(.status(.resting))
                resting = true
                cycleStart = cycleStart + cycle.interval * cycles
                if let changed = try await wait(until: cycleStart, mode) {
                    try await skip(before: currentTrackTime())
                    return .modeChanged(changed)
                }
                try await skip(before: cycleStart)
                continue
            }

            var selector = AcquisitionSelector(desiredAccuracy: cycle.desiredAccuracy)
            let timeout = cycleStart + cycle.acquisitionTimeout
            var endedAt: Duration?
            while let step = try peek(), step.trackTime < timeout {
                if let changed = try await wait(until: step.trackTime, mode) { return .modeChanged(changed) }
                consume(step)
                if selector.offer(step.location) {
                    deliverAcquired(step.location)
                    endedAt = step.trackTime
                    break
                }
            }
            if endedAt == nil {
                if try peek() == nil {
                    // The file ended during the acquisition, like a receiver going away: keep the best.
                    if let best = selector.best { deliverAcquired(best) }
                    return .ended
                }
                if let changed = try await wait(until: timeout, mode) { return .modeChanged(changed) }
                if let best = selector.best {
                    deliverAcquired(best)
                } else {
                    noteEmptyAcquisitions(1, cycle)
                }
                endedAt = timeout
            }
            // Rest until the next cycle; what comes due meanwhile is skipped, and only once it is due, so
            // that a mode change during the rest resumes with the points after it.
            context.report(.status(.resting))
            resting = true
            cycleStart = max(cycleStart + cycle.interval, endedAt ?? cycleStart)
            if let changed = try await wait(until: cycleStart, mode) {
                try await skip(before: currentTrackTime())
                return .modeChanged(changed)
            }
            try await skip(before: cycleStart)
        }
    }

    /// Counts acquisitions that found no point; the first of a run is reported at once, the run's length
    /// when a fix comes again (``deliverAcquired(_:)``), so a long gap costs two lines, not one per interval.
    private func noteEmptyAcquisitions(_ count: Int64, _ cycle: DutyCycle) {
        if emptyAcquisitions == 0 {
            let seconds = cycle.acquisitionTimeout.seconds
            context.report(
                .error(
                    LocationError(
                        .noFix,
                        "no fix within the acquisition timeout of \(seconds) s "
                            + "(\(planner.fileName) has no point in this stretch of track time; "
                            + "the acquisitions that follow without a point are counted when a fix comes again)")))
        }
        emptyAcquisitions += count
    }

    /// Delivers an acquired fix, first saying how many acquisitions before it found nothing.
    private func deliverAcquired(_ location: Location) {
        if emptyAcquisitions > 0 {
            context.report(
                .error(
                    LocationError(
                        .sourceRecovered,
                        "a fix again after \(emptyAcquisitions) acquisition\(emptyAcquisitions == 1 ? "" : "s") "
                            + "without a point in \(planner.fileName)")))
            emptyAcquisitions = 0
        }
        deliver(location)
    }

    // MARK: - Steps

    private func nextStep() throws -> ReplayPlanner.Step? {
        do {
            return try planner.next()
        } catch {
            throw error.locationError
        }
    }

    /// The next step, without taking it.
    private func peek() throws -> ReplayPlanner.Step? {
        if pending == nil, !exhausted {
            pending = try nextStep()
            exhausted = pending == nil
        }
        return pending
    }

    /// Takes `step` (the one ``peek()`` returned) off the schedule, and flags the start of a run of points
    /// whose time does not advance.
    private func consume(_ step: ReplayPlanner.Step) {
        pending = nil
        if let stepBack = step.stepBack {
            // Only the first run is reported: a phone recording can hold a hundred of them, and one line
            // says all there is to say.
            if !inStepBackRun, !reportedStepBack {
                let when = stepBack == 0 ? "the same time as" : "a time \(-stepBack) s before"
                context.report(
                    .error(
                        LocationError(
                            .invalidData,
                            "\(planner.fileName):\(step.line): this point has \(when) a point before it; it, and "
                                + "any that follow without a later time, are delivered right after the previous point "
                                + "(later points like this are delivered the same way without another report)")))
                reportedStepBack = true
            }
            inStepBackRun = true
        } else {
            inStepBackRun = false
        }
    }

    private func deliver(_ location: Location) {
        if !deliveredAny {
            deliveredAny = true
            context.report(.status(.hasFix))
        }
        context.deliver(location)
    }

    /// Drops the points due before `trackTime` (the receiver is resting).
    private func skip(before trackTime: Duration) async throws {
        while let step = try peek(), step.trackTime < trackTime {
            pending = nil
            try await pause()
        }
        inStepBackRun = false
    }

    // MARK: - Time

    /// Track time now: the clock since the start, scaled; as fast as possible, the next point's time.
    private func currentTrackTime() -> Duration {
        guard let factor else { return (try? peek())?.trackTime ?? .zero }
        return (context.timeline.now - origin) * factor
    }

    /// Waits until `trackTime` is due on the clock; returns the new mode instead if it changes first.
    private func wait(until trackTime: Duration, _ mode: AcquisitionMode) async throws -> AcquisitionMode? {
        guard let factor else {
            try await pause()
            let current = context.mode
            return current == mode ? nil : current
        }
        return try await Self.sleep(until: origin + trackTime / factor, unlessModeChangesFrom: mode, context)
    }

    /// As fast as possible, still let other tasks run and notice cancellation now and then.
    private func pause() async throws {
        // Every 2,048 steps (a few milliseconds): often enough to stop and to share the thread promptly,
        // rarely enough to cost nothing per fix.
        stepsSinceYield += 1
        if stepsSinceYield >= 2_048 {
            stepsSinceYield = 0
            await Task.yield()
            try Task.checkCancellation()
        }
    }

    private enum Wake: Sendable {
        case deadline
        case mode(AcquisitionMode)
        case cancelled
    }

    private static func sleep(
        until deadline: Duration, unlessModeChangesFrom mode: AcquisitionMode, _ context: LocationSourceContext
    ) async throws -> AcquisitionMode? {
        while true {
            try Task.checkCancellation()
            let current = context.mode
            if current != mode { return current }
            if context.timeline.now >= deadline { return nil }
            let wake = try await withThrowingTaskGroup(of: Wake.self) { group in
                group.addTask {
                    try await context.timeline.sleep(until: deadline)
                    return .deadline
                }
                group.addTask {
                    let next = await context.nextMode(after: mode)
                    return next == mode ? .cancelled : .mode(next)
                }
                let first = try await group.next() ?? .cancelled
                group.cancelAll()
                return first
            }
            switch wake {
            case .deadline: return nil
            case .mode(let next): return next
            case .cancelled: continue  // the loop head throws if the task was cancelled
            }
        }
    }
}
