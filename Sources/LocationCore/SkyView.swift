import Foundation

/// The satellites a receiver sees at one moment, with the dilutions of precision of their geometry.
public struct SkyView: Sendable, Hashable, Codable {
    /// When the receiver reported it, when it said.
    public var time: Date?
    /// The receiver (a gpsd device path), when known.
    public var source: String?
    /// The satellites in view, in the receiver's order.
    public var satellites: [Satellite]
    /// Horizontal dilution of precision.
    public var hdop: Double?
    /// Vertical dilution of precision.
    public var vdop: Double?
    /// Position (3D) dilution of precision.
    public var pdop: Double?

    /// Creates a sky view.
    public init(time: Date? = nil, source: String? = nil, satellites: [Satellite], hdop: Double? = nil, vdop: Double? = nil, pdop: Double? = nil) {
        self.time = time
        self.source = source
        self.satellites = satellites
        self.hdop = hdop
        self.vdop = vdop
        self.pdop = pdop
    }

    /// How many satellites the fix uses.
    public var usedCount: Int { satellites.lazy.filter(\.isUsed).count }
}
