import Foundation
import LocationCore

/// Where a track goes on the picture: a local equirectangular projection around the track's centre (metres
/// east and north), scaled equally on both axes to fit the plot area.
///
/// Longitudes are unwrapped along the track (see ``LongitudeUnwrapper``), so a track across the
/// antimeridian stays in one piece. Near a pole the east–west scale uses a small floor for the cosine of the
/// latitude so that nothing divides by zero; such a track is drawn squeezed, not lost.
package struct PlotFrame: Sendable, Hashable {
    /// The picture's size in pixels.
    package let width: Double, height: Double
    /// The plot area inside the picture, in pixels.
    package let plotLeft: Double, plotTop: Double, plotWidth: Double, plotHeight: Double
    /// Pixels per metre.
    package let scale: Double
    private let centreLatitude: Double, centreLongitude: Double, metresPerDegreeEast: Double
    private let centreX: Double, centreY: Double

    private static let metresPerDegree = Location.meanEarthRadius * Double.pi / 180
    /// The smallest extent drawn, in metres, so that one point or a still receiver gets a sensible scale.
    package static let minimumExtent = 20.0

    /// Fits the summary's extent into the plot area of a `width` × `height` picture.
    package init(summary: TrackSummary, width: Double, height: Double) {
        self.width = width
        self.height = height
        plotLeft = 30
        plotTop = 64
        plotWidth = max(10, width - 60)
        plotHeight = max(10, height - 64 - 96)
        let centre = summary.centre
        centreLatitude = centre.latitude
        centreLongitude = centre.longitude
        metresPerDegreeEast = Self.metresPerDegree * max(cos(centre.latitude * .pi / 180), 1e-6)
        let extentEast = max((summary.maxLongitude - summary.minLongitude) * metresPerDegreeEast, Self.minimumExtent)
        let extentNorth = max((summary.maxLatitude - summary.minLatitude) * Self.metresPerDegree, Self.minimumExtent)
        // 4 % of room on each side, so that dots and circles at the edge are not cut.
        scale = min(plotWidth / extentEast, plotHeight / extentNorth) * 0.92
        centreX = plotLeft + plotWidth / 2
        centreY = plotTop + plotHeight / 2
    }

    /// Metres east and north of the centre for a latitude and an unwrapped longitude.
    package func metres(latitude: Double, unwrappedLongitude: Double) -> (east: Double, north: Double) {
        ((unwrappedLongitude - centreLongitude) * metresPerDegreeEast, (latitude - centreLatitude) * Self.metresPerDegree)
    }

    /// The pixel (x to the right, y down) for a latitude and an unwrapped longitude.
    package func pixel(latitude: Double, unwrappedLongitude: Double) -> (x: Double, y: Double) {
        let (east, north) = metres(latitude: latitude, unwrappedLongitude: unwrappedLongitude)
        return (centreX + east * scale, centreY - north * scale)
    }

    /// A round length for the scale bar (1, 2 or 5 × 10ⁿ metres) about a fifth of the plot width, and its
    /// length in pixels.
    package var scaleBar: (metres: Double, pixels: Double) {
        let target = plotWidth / 5 / scale
        let power = pow(10, (log10(target)).rounded(.down))
        let step = [5.0, 2, 1].map { $0 * power }.first { $0 <= target } ?? power
        return (step, step * scale)
    }

    /// A length for people: "500 m", "2 km", "1.5 km".
    package static func lengthText(_ metres: Double) -> String {
        if metres >= 1000 {
            let km = metres / 1000
            return km >= 100 || km == km.rounded() ? "\(Int(km.rounded())) km" : String(format: "%.1f km", km)
        }
        if metres >= 1 { return "\(Int(metres.rounded())) m" }
        return String(format: "%.2g m", metres)
    }
}
