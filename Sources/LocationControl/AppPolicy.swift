/// The policy settings an app gives its session when it opens it (``ControlRequest/open(app:attach:create:policy:owner:)``);
/// each one left out keeps the session's value (the daemon's configured default for a new session).
public struct AppPolicy: Sendable, Hashable {
    /// The accuracy, in metres, a `current` request waits for (`accuracy`).
    public var desiredAccuracy: Double?
    /// Minimum metres between delivered fixes (`distanceFilter`).
    public var distanceFilter: Double?
    /// Seconds between background acquisitions (`reducedInterval`).
    public var reducedInterval: Double?
    /// The accuracy, in metres, a background acquisition waits for (`reducedAccuracy`).
    public var reducedAccuracy: Double?
    /// The background location mode (`backgroundLocation`).
    public var backgroundLocation: Bool?
    /// Whether the app wants location updates (`updates`): `false` stops them, as
    /// `stopUpdatingLocation()` does; the receiver is switched off while no app wants any.
    public var updates: Bool?

    /// Creates a policy; `nil` leaves a setting as it is.
    public init(
        desiredAccuracy: Double? = nil, distanceFilter: Double? = nil, reducedInterval: Double? = nil,
        reducedAccuracy: Double? = nil, backgroundLocation: Bool? = nil, updates: Bool? = nil
    ) {
        self.updates = updates
        self.desiredAccuracy = desiredAccuracy
        self.distanceFilter = distanceFilter
        self.reducedInterval = reducedInterval
        self.reducedAccuracy = reducedAccuracy
        self.backgroundLocation = backgroundLocation
    }

    /// The request's keys for the settings given, each `,"key":value`.
    var jsonMembers: String {
        var text = ""
        if let desiredAccuracy { text += ",\"accuracy\":\(JSONText.number(desiredAccuracy))" }
        if let distanceFilter { text += ",\"distanceFilter\":\(JSONText.number(distanceFilter))" }
        if let reducedInterval { text += ",\"reducedInterval\":\(JSONText.number(reducedInterval))" }
        if let reducedAccuracy { text += ",\"reducedAccuracy\":\(JSONText.number(reducedAccuracy))" }
        if let backgroundLocation { text += ",\"backgroundLocation\":\(backgroundLocation)" }
        if let updates { text += ",\"updates\":\(updates)" }
        return text
    }
}
