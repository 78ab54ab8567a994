import Foundation
import LocationCore

/// Values shared by the control tests.
enum ControlFixtures {
    /// A complete 3D fix with the fields a receiver usually reports.
    static let location = Location(
        latitude: 52.52, longitude: 13.405, altitude: 34, horizontalAccuracy: 4.5,
        timestamp: Date(timeIntervalSince1970: 1_714_543_200), fixMode: .threeDimensional,
        satellitesUsed: 9, source: "/dev/ttyACM0")
}
