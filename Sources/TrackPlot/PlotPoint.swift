import Foundation
import LocationCore

/// One position to draw: where, when, and how sure.
package struct PlotPoint: Sendable, Hashable {
    /// Latitude in degrees, −90…90.
    package var latitude: Double
    /// Longitude in degrees, −180…180.
    package var longitude: Double
    /// Seconds since 1970, or `nil` for an untimed GPX point.
    package var time: Double?
    /// Horizontal accuracy radius in metres, or `nil` when unknown.
    package var horizontalAccuracy: Double?

    /// Creates a point; a non-finite or negative accuracy is taken as unknown.
    package init(latitude: Double, longitude: Double, time: Double?, horizontalAccuracy: Double? = nil) {
        self.latitude = latitude
        self.longitude = longitude
        self.time = time.flatMap { $0.isFinite ? $0 : nil }
        self.horizontalAccuracy = horizontalAccuracy.flatMap { $0.isFinite && $0 >= 0 ? $0 : nil }
    }

    /// The point of a delivered location.
    package init(_ location: Location) {
        self.init(
            latitude: location.latitude, longitude: location.longitude,
            time: location.timestamp.timeIntervalSince1970, horizontalAccuracy: location.horizontalAccuracy)
    }

    /// Whether the coordinate is finite and on the globe.
    package var isOnGlobe: Bool {
        latitude.isFinite && longitude.isFinite && abs(latitude) <= 90 && abs(longitude) <= 180
    }
}
