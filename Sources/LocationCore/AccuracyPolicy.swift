import Foundation

/// The accuracy policy in effect, chosen by whether the app runs in the background.
public enum AccuracyPolicy: String, Sendable, Hashable, Codable, CaseIterable {
    /// Foreground: a continuous stream, every epoch, thinned only by the user's distance filter.
    case high
    /// Background: duty-cycled, one fix per interval; see ``ReducedAccuracyPolicy``.
    case reduced
}

/// The parameters of the reduced (background) policy: the ``DutyCycle`` the source runs, and what the
/// manager does with the fixes it gets (a distance filter, a coarsening grid).
public struct ReducedAccuracyPolicy: Sendable, Hashable {
    /// The duty cycle a source runs under this policy.
    public var dutyCycle: DutyCycle
    /// Minimum distance in metres between delivered fixes; `nil` uses the manager's distance filter.
    /// Default `nil`.
    public var distanceFilter: Double?
    /// When set, coordinates are snapped to a grid of this many metres and the horizontal accuracy is
    /// raised to at least the grid size, so background consumers get only a coarse position. Default `nil`.
    public var coarseningGrid: Double?

    /// Creates reduced-policy parameters; every argument defaults to the documented value.
    public init(
        interval: Duration = .seconds(60),
        desiredAccuracy: Double? = 100,
        acquisitionTimeout: Duration = .seconds(30),
        distanceFilter: Double? = nil,
        coarseningGrid: Double? = nil
    ) {
        self.dutyCycle = DutyCycle(
            interval: interval, desiredAccuracy: desiredAccuracy, acquisitionTimeout: acquisitionTimeout)
        self.distanceFilter = distanceFilter
        self.coarseningGrid = coarseningGrid
    }

    /// Time from one acquisition's start to the next (``DutyCycle/interval``). Default 60 s.
    public var interval: Duration {
        get { dutyCycle.interval }
        set { dutyCycle.interval = newValue }
    }

    /// An acquisition ends at the first fix at least this accurate, in metres; `nil` takes the first fix
    /// (``DutyCycle/desiredAccuracy``). Default 100 m.
    public var desiredAccuracy: Double? {
        get { dutyCycle.desiredAccuracy }
        set { dutyCycle.desiredAccuracy = newValue }
    }

    /// The longest an acquisition listens before settling for the best fix seen
    /// (``DutyCycle/acquisitionTimeout``). Default 30 s.
    public var acquisitionTimeout: Duration {
        get { dutyCycle.acquisitionTimeout }
        set { dutyCycle.acquisitionTimeout = newValue }
    }

    /// Snaps a fix to the coarsening grid, if one is set.
    public func coarsen(_ location: Location) -> Location {
        guard let grid = coarseningGrid, grid > 0 else { return location }
        let metresPerDegree = 111_320.0
        var result = location
        let latitudeStep = grid / metresPerDegree
        result.latitude = min(90, max(-90, (location.latitude / latitudeStep).rounded() * latitudeStep))
        let longitudeStep = grid / (metresPerDegree * max(cos(result.latitude * .pi / 180), 1e-6))
        result.longitude = min(180, max(-180, (location.longitude / longitudeStep).rounded() * longitudeStep))
        result.horizontalAccuracy = max(location.horizontalAccuracy ?? grid, grid)
        return result
    }
}
