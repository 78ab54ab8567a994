/// A source that can be opened on demand and closed when not needed; both acquisition modes come free.
///
/// Implement ``listen(_:)``: it opens the receiver (for gpsd: connect and enable the WATCH) and yields
/// events until the consuming task stops iterating, at which point the stream's termination handler must
/// close the receiver again. The default `run(_:)` then
/// - in continuous mode keeps one listener open and forwards every event;
/// - in duty-cycled mode opens a listener for each acquisition, ends it at the first fix meeting the
///   desired accuracy (or at the timeout, with the best fix seen), closes it, and sleeps until the next
///   interval begins, so nothing is read while resting;
/// - switches modes as soon as the context's mode changes.
public protocol ListeningLocationSource: LocationSource {
    /// Opens the receiver and streams its events; ending the iteration must close it.
    func listen(_ context: LocationSourceContext) -> AsyncThrowingStream<LocationSourceEvent, any Error>
}

extension ListeningLocationSource {
    /// Runs the source in whatever mode the context asks for, following mode changes.
    public func run(_ context: LocationSourceContext) async throws {
        var mode = context.mode
        while !Task.isCancelled {
            let outcome = try await withThrowingTaskGroup(of: ModeOutcome.self) { group in
                let current = mode
                group.addTask { try await self.runMode(current, context) }
                group.addTask { .modeChanged(await context.nextMode(after: current)) }
                let first = try await group.next() ?? .ended
                group.cancelAll()
                return first
            }
            switch outcome {
            case .ended: return
            case .modeChanged(let next): mode = next
            }
        }
    }

    private func runMode(_ mode: AcquisitionMode, _ context: LocationSourceContext) async throws -> ModeOutcome {
        switch mode {
        case .continuous:
            for try await event in listen(context) {
                try Task.checkCancellation()
                context.report(event)
            }
            return .ended
        case .dutyCycled(let cycle):
            var cycleStart = context.timeline.now
            // Acquisitions in a row without a fix: the first is reported, the run's length when a fix comes
            // again, so a receiver without a fix for a day costs two lines, not one per interval.
            var emptyRun = 0
            while true {
                let (ended, best) = try await acquire(cycle, startedAt: cycleStart, context)
                if let best {
                    if emptyRun > 0 {
                        let plural = emptyRun == 1 ? "" : "s"
                        context.report(
                            .error(LocationError(.sourceRecovered, "a fix again after \(emptyRun) acquisition\(plural) without one")))
                        emptyRun = 0
                    }
                    context.deliver(best)
                } else if !ended {
                    if emptyRun == 0 {
                        let seconds = cycle.acquisitionTimeout.seconds
                        context.report(
                            .error(
                                LocationError(
                                    .noFix,
                                    "no fix within the acquisition timeout of \(seconds) s (the acquisitions that follow "
                                        + "without a fix are counted when one comes again)")))
                    }
                    emptyRun += 1
                }
                if ended { return .ended }
                context.report(.status(.resting))
                let nextStart = cycleStart + cycle.interval
                try await context.timeline.sleep(until: nextStart)
                // After a long acquisition the next one starts at once, never in a burst.
                cycleStart = max(nextStart, context.timeline.now)
            }
        }
    }

    /// Listens until a fix meets the goal or the timeout passes; returns whether the listener ended by
    /// itself (the source ran out) and the chosen fix, if any. A listener that failed fails the run.
    private func acquire(
        _ cycle: DutyCycle, startedAt start: Duration, _ context: LocationSourceContext
    ) async throws -> (ended: Bool, best: Location?) {
        let acquired = try await AcquisitionSelector.acquire(
            desiredAccuracy: cycle.desiredAccuracy, from: listen(context), until: start + cycle.acquisitionTimeout,
            timeline: context.timeline, otherEvents: { context.report($0) })
        if let failure = acquired.failure { throw failure }
        return (acquired.ended, acquired.best)
    }
}

private enum ModeOutcome: Sendable {
    case ended
    case modeChanged(AcquisitionMode)
}
