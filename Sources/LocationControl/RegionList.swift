import Foundation
import LocationCore

/// An app's regions as the `region` and `regions` replies carry them: `{"ok":true,"regions":[{"identifier":
/// "home","latitude":52.52,"longitude":13.405,"radius":150,"loiteringDelay":60,"state":"inside"}]}`.
package struct RegionList: Codable, Sendable, Hashable {
    /// One region and its state.
    package struct Entry: Codable, Sendable, Hashable {
        /// The region's name.
        package var identifier: String
        /// Its centre, degrees.
        package var latitude: Double
        /// Its centre, degrees.
        package var longitude: Double
        /// Its radius, metres.
        package var radius: Double
        /// Its loitering delay, seconds, if it has one.
        package var loiteringDelay: Double?
        /// `unknown`, `inside` or `outside`.
        package var state: RegionState
    }

    /// The regions, by identifier.
    package var regions: [Entry]

    /// The list of `records`.
    package init(_ records: [RegionMonitor.RegionRecord]) {
        regions = records.map { record in
            Entry(
                identifier: record.region.identifier, latitude: record.region.latitude, longitude: record.region.longitude,
                radius: record.region.radius, loiteringDelay: record.region.loiteringDelay?.seconds, state: record.state)
        }
    }
}
