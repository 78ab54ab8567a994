import Foundation

/// Rejects fixes that imply an impossible movement: a jump from the last accepted fix that no speed up to
/// ``maximumSpeed`` explains, even with both fixes' accuracies as slack.
///
/// A fix `d` metres and `Δt` seconds (fix time) from the last accepted one is rejected when
/// `d > maximumSpeed × |Δt| + 3 × (accuracy + last accuracy) + 10 m` (an unknown accuracy counts as
/// ``unknownAccuracy``): 100 m/s is faster than any car, and three accuracies are far beyond what a fix's
/// own error explains. So a fix 5 km off for one second is rejected, while a receiver that comes back after
/// an hour in a tunnel, 60 km on, is not.
///
/// A rejected fix is never delivered and never changes a region. Should the receiver truly have moved (the
/// last accepted fix was the wrong one), the fixes after the jump agree with each other: once
/// ``reanchorCount`` rejected fixes in a row each pass the gate against the one before, the last of them is
/// accepted and becomes the reference.
public struct OutlierGate: Sendable, Hashable {
    /// The fastest plausible movement, metres per second. Default 100 (on foot or in a car).
    public var maximumSpeed: Double
    /// The accuracy assumed for a fix that reports none, metres.
    public static let unknownAccuracy = 50.0
    /// Rejected fixes in a row, each consistent with the one before, after which the last is accepted.
    public static let reanchorCount = 3

    /// A gate at `maximumSpeed` metres per second (clamped to at least 1).
    public init(maximumSpeed: Double = 100) {
        self.maximumSpeed = maximumSpeed.isFinite ? max(1, maximumSpeed) : 100
    }

    /// What the gate decided about one fix.
    public enum Verdict: Sendable, Hashable {
        /// Passed (or re-anchored): deliver it.
        case accepted
        /// Rejected: `distance` metres from the reference, `interval` seconds of fix time apart.
        case rejected(distance: Double, interval: Double)
    }

    /// The gate's memory: the last accepted fix and the rejected ones since.
    package struct Memory: Sendable {
        package var reference: Location?
        package var lastRejected: Location?
        package var consistentRejections = 0

        /// No fix seen yet.
        package init(reference: Location? = nil) { self.reference = reference }
    }

    /// Whether `fix` is possible after `reference`.
    func passes(_ fix: Location, after reference: Location) -> Bool {
        let interval = abs(fix.timestamp.timeIntervalSince(reference.timestamp))
        let slack = 3 * (Self.accuracy(fix) + Self.accuracy(reference)) + 10
        return fix.distance(from: reference) <= maximumSpeed * interval + slack
    }

    /// Judges `fix`, updating `memory`.
    package func judge(_ fix: Location, _ memory: inout Memory) -> Verdict {
        guard let reference = memory.reference, !passes(fix, after: reference) else {
            memory = Memory(reference: fix)
            return .accepted
        }
        if let previous = memory.lastRejected, passes(fix, after: previous) {
            memory.consistentRejections += 1
        } else {
            memory.consistentRejections = 1
        }
        memory.lastRejected = fix
        if memory.consistentRejections >= Self.reanchorCount {
            memory = Memory(reference: fix)
            return .accepted
        }
        return .rejected(distance: fix.distance(from: reference), interval: fix.timestamp.timeIntervalSince(reference.timestamp))
    }

    private static func accuracy(_ fix: Location) -> Double {
        guard let accuracy = fix.horizontalAccuracy, accuracy.isFinite, accuracy >= 0 else { return unknownAccuracy }
        return min(accuracy, 10_000)
    }
}
