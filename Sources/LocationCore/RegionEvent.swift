import Foundation

/// A region's state as a ``RegionMonitor`` knows it.
public enum RegionState: String, Sendable, Hashable, Codable, CaseIterable {
    /// No fix has decided it yet (the start, unless an assumed state was given).
    case unknown
    /// The last deciding fix was inside.
    case inside
    /// The last deciding fix was outside, with margin.
    case outside
}

/// A transition of a monitored region, at the fix that caused it.
public struct RegionEvent: Sendable, Hashable {
    /// What happened.
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        /// The region was entered: a fix inside its radius (from outside or unknown).
        case enter
        /// The region was left: two fixes in a row clearly outside (see ``RegionMonitor``).
        case exit
        /// A stay inside lasted the region's loitering delay, in fix time.
        case dwell
    }

    /// The region's identifier.
    public var region: String
    /// What happened.
    public var kind: Kind
    /// The fix that caused it (its time is the event's time).
    public var location: Location

    /// An event.
    public init(region: String, kind: Kind, location: Location) {
        self.region = region
        self.kind = kind
        self.location = location
    }

    /// When it happened: the fix time of ``location``.
    public var timestamp: Date { location.timestamp }
}
