/// Makes longitudes continuous along a track, so that crossing the antimeridian (179.9° to −179.9°) is a
/// step of 0.2°, not 359.8°: each longitude is moved by whole turns to within 180° of the one before.
package struct LongitudeUnwrapper: Sendable, Hashable {
    private var previous: Double?

    /// A new track.
    package init() {}

    /// The longitude, moved by whole turns to be within 180° of the previous one.
    package mutating func unwrap(_ longitude: Double) -> Double {
        guard let previous else {
            self.previous = longitude
            return longitude
        }
        var value = longitude
        let turns = ((previous - value) / 360).rounded()
        value += turns * 360
        self.previous = value
        return value
    }
}
