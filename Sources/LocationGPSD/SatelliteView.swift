import LocationCore

/// The satellites a receiver sees, and when to say so: while the receiver has no fix, a person waiting
/// wants to know whether any sky is in view.
///
/// The epoch merger feeds it each SKY's count of satellites in view and each change of fix state; it
/// answers with the ``LocationSourceEvent/satellitesInView(_:)`` events to report: the known count just
/// before the source reports `.status(.noFix)`, then each new count until a fix comes.
struct SatelliteView: Sendable {
    /// The latest count of satellites in view, from the last SKY that listed them.
    private(set) var visible: Int?
    private var waiting = false
    private var reported: Int?

    /// A SKY's count of satellites in view (`nil` when it did not list them).
    mutating func sky(visible count: Int?) -> [LocationSourceEvent] {
        guard let count, count >= 0 else { return [] }
        visible = count
        guard waiting, count != reported else { return [] }
        reported = count
        return [.satellitesInView(count)]
    }

    /// The receiver has no fix from now on; the events go just before `.status(.noFix)`.
    mutating func lostFix() -> [LocationSourceEvent] {
        waiting = true
        guard let visible else { return [] }
        reported = visible
        return [.satellitesInView(visible)]
    }

    /// The receiver has a fix again.
    mutating func gotFix() {
        waiting = false
        reported = nil
    }
}
