/// Picks the fix an acquisition ends with: the first that meets the desired accuracy, else the best seen.
///
/// "Best" is the smallest horizontal accuracy; a fix without one ranks below any fix with one, and among
/// equals the later fix wins (it is fresher).
public struct AcquisitionSelector: Sendable {
    /// The accuracy, in metres, that ends the acquisition at once; `nil` accepts the first fix.
    public let desiredAccuracy: Double?
    /// The best fix offered so far.
    public private(set) var best: Location?
    /// Whether a fix meeting ``desiredAccuracy`` has been offered.
    public private(set) var isSatisfied = false
    /// How many fixes were offered.
    public private(set) var offered = 0

    /// Creates a selector for the given accuracy goal.
    public init(desiredAccuracy: Double?) {
        self.desiredAccuracy = desiredAccuracy
    }

    /// Offers a fix; returns `true` when the acquisition may end (this fix meets the goal).
    @discardableResult
    public mutating func offer(_ location: Location) -> Bool {
        offered += 1
        if isSatisfied { return true }
        if let current = best {
            if Self.rank(location) <= Self.rank(current) { best = location }
        } else {
            best = location
        }
        if Self.meets(location, desiredAccuracy) {
            best = location
            isSatisfied = true
        }
        return isSatisfied
    }

    /// Whether a fix's horizontal accuracy is at most `desiredAccuracy` (always true when that is `nil`).
    public static func meets(_ location: Location, _ desiredAccuracy: Double?) -> Bool {
        guard let desiredAccuracy else { return true }
        guard let accuracy = location.horizontalAccuracy else { return false }
        return accuracy <= desiredAccuracy
    }

    private static func rank(_ location: Location) -> Double {
        location.horizontalAccuracy ?? .infinity
    }
}

extension AcquisitionSelector {
    /// What ``acquire(desiredAccuracy:from:until:timeline:otherEvents:)`` ended with.
    package struct Acquired: Sendable {
        /// The fix chosen: the first that met the goal, else the best seen; `nil` when none came.
        package var best: Location?
        /// Whether the events ended by themselves (the source ran out) before the goal or the deadline.
        package var ended: Bool
        /// The error the events ended with, if they failed.
        package var failure: (any Error)?
    }

    /// The one "best fix within a timeout": offers every fix of `events` until one meets
    /// `desiredAccuracy`, the events end, or `deadline` passes on `timeline`; every other event goes to
    /// `otherEvents`. A duty-cycled acquisition and a one-shot position both run on it.
    ///
    /// - Throws: `CancellationError` when the calling task is cancelled.
    package static func acquire<Events: AsyncSequence & Sendable>(
        desiredAccuracy: Double?,
        from events: Events,
        until deadline: Duration,
        timeline: Timeline,
        otherEvents: @escaping @Sendable (LocationSourceEvent) -> Void = { _ in }
    ) async throws(CancellationError) -> Acquired where Events.Element == LocationSourceEvent {
        let selector = Locked(AcquisitionSelector(desiredAccuracy: desiredAccuracy))
        let outcome = await withTaskGroup(of: AcquisitionOutcome.self) { group in
            group.addTask {
                do {
                    for try await event in events {
                        guard case .location(let location) = event else {
                            otherEvents(event)
                            continue
                        }
                        if selector.withLock({ $0.offer(location) }) { return .met }
                    }
                    return Task.isCancelled ? .cancelled : .ended
                } catch {
                    return Task.isCancelled ? .cancelled : .failed(error)
                }
            }
            group.addTask {
                do {
                    try await timeline.sleep(until: deadline)
                    return .timedOut
                } catch {
                    return .cancelled
                }
            }
            let first = await group.next() ?? .cancelled
            group.cancelAll()
            return first
        }
        switch outcome {
        case .met, .timedOut: return Acquired(best: selector.value.best, ended: false, failure: nil)
        case .ended: return Acquired(best: selector.value.best, ended: true, failure: nil)
        case .failed(let error): return Acquired(best: selector.value.best, ended: true, failure: error)
        case .cancelled: throw CancellationError()
        }
    }
}

/// How the racing tasks of one acquisition ended.
private enum AcquisitionOutcome: Sendable {
    case met, ended, failed(any Error), timedOut, cancelled
}
