import Foundation
import LocationCore

/// A `SkyView` as JSON, one encoding for `locationctl sky --format json` and for locationd's `sky` reply:
/// `{"type":"sky","time":…,"timestamp":…,"source":…,"satellitesUsed":N,"satellitesVisible":M,"hdop":…,
/// "vdop":…,"pdop":…,"satellites":[{"prn":…,"constellation":…,"systemNumber":…,"elevation":…,
/// "azimuth":…,"signalStrength":…,"isUsed":…},…]}`, absent values left out.
package enum SkyViewJSON {
    /// The view as one JSON object (no line end).
    package static func object(_ view: SkyView) -> String {
        var fields = [#""type":"sky""#]
        if let time = view.time {
            var seconds: [UInt8] = []
            RFC3339.appendSeconds(time, to: &seconds)
            fields.append(#""time":"# + String(decoding: seconds, as: UTF8.self))
            fields.append(#""timestamp":"# + JSONText.string(RFC3339.string(from: time, fractionDigits: 3)))
        }
        if let source = view.source { fields.append(#""source":"# + JSONText.string(source)) }
        fields.append(#""satellitesUsed":\#(view.usedCount)"#)
        fields.append(#""satellitesVisible":\#(view.satellites.count)"#)
        for (name, value) in [("hdop", view.hdop), ("vdop", view.vdop), ("pdop", view.pdop)] {
            if let value, value.isFinite { fields.append("\"\(name)\":\(JSONText.number(value))") }
        }
        let satellites = view.satellites.map { satellite in
            var parts = [#""prn":\#(satellite.prn)"#]
            if let constellation = satellite.constellation { parts.append(#""constellation":"\#(constellation.rawValue)""#) }
            if let number = satellite.systemNumber { parts.append(#""systemNumber":\#(number)"#) }
            if let value = satellite.elevation { parts.append(#""elevation":"# + JSONText.number(value)) }
            if let value = satellite.azimuth { parts.append(#""azimuth":"# + JSONText.number(value)) }
            if let value = satellite.signalStrength { parts.append(#""signalStrength":"# + JSONText.number(value)) }
            parts.append(#""isUsed":\#(satellite.isUsed)"#)
            return "{" + parts.joined(separator: ",") + "}"
        }
        fields.append(#""satellites":["# + satellites.joined(separator: ",") + "]")
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// The view an object of ``object(_:)`` describes (as a member of a reply, decoded by `JSONDecoder`).
    package struct Wire: Decodable, Sendable {
        struct SatelliteWire: Decodable, Sendable {
            var prn: Int
            var constellation: Satellite.Constellation?
            var systemNumber: Int?
            var elevation: Double?
            var azimuth: Double?
            var signalStrength: Double?
            var isUsed: Bool
        }

        var time: Double?
        var source: String?
        var hdop: Double?
        var vdop: Double?
        var pdop: Double?
        var satellites: [SatelliteWire]

        /// The view.
        package var view: SkyView {
            SkyView(
                time: time.map { Date(timeIntervalSince1970: $0) }, source: source,
                satellites: satellites.map {
                    Satellite(
                        prn: $0.prn, constellation: $0.constellation, systemNumber: $0.systemNumber, elevation: $0.elevation,
                        azimuth: $0.azimuth, signalStrength: $0.signalStrength, isUsed: $0.isUsed)
                },
                hdop: hdop, vdop: vdop, pdop: pdop)
        }
    }
}
