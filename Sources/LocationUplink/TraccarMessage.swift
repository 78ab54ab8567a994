import Foundation
import LocationControl
import LocationCore

/// A fix as Traccar's OsmAnd protocol reads a JSON body (Traccar 6.7 and later, as its own client sends it):
/// `{"device_id":…,"location":{"timestamp":ISO 8601,"coords":{…},"is_moving":…,"odometer":0}}`.
///
/// Traccar reads all six `coords` numbers: speed (m/s) and heading are `-1` when unknown, altitude 0, and the
/// accuracy is never missing (the OwnTracks estimate: HDOP × 5 m, else 50 m).
enum TraccarMessage {
    /// The speed above which the fix is sent as moving, m/s (about 1.8 km/h: a walk, not GNSS jitter).
    static let movingSpeed = 0.5

    static func location(_ fix: Location, deviceID: String) -> [UInt8] {
        var text = #"{"device_id":"# + JSONText.string(deviceID)
        text += #","location":{"timestamp":""# + RFC3339.string(from: fix.timestamp) + #"","coords":{"latitude":"#
        text += number(fix.latitude, digits: 7)
        text += #","longitude":"# + number(fix.longitude, digits: 7)
        let accuracy = fix.horizontalAccuracy.flatMap { $0.isFinite && $0 >= 0 ? $0 : nil }
            ?? Double(OwnTracksMessage.accuracy(of: fix))
        text += #","accuracy":"# + number(accuracy, digits: 1)
        let speed = fix.speed.flatMap { $0.isFinite && $0 >= 0 ? $0 : nil }
        text += #","speed":"# + (speed.map { number($0, digits: 2) } ?? "-1")
        let heading = fix.course.flatMap { $0.isFinite && $0 >= 0 ? $0.truncatingRemainder(dividingBy: 360) : nil }
        text += #","heading":"# + (heading.map { number($0, digits: 1) } ?? "-1")
        let altitude = fix.altitude.flatMap { $0.isFinite && abs($0) < 1e7 ? $0 : nil } ?? 0
        text += #","altitude":"# + number(altitude, digits: 1)
        text += #"},"is_moving":"# + ((speed ?? 0) > movingSpeed ? "true" : "false")
        text += #","odometer":0}}"#
        return Array(text.utf8)
    }

    /// A number with at most `digits` decimals, never an exponent.
    private static func number(_ value: Double, digits: Int) -> String {
        guard value.isFinite else { return "0" }
        var text = String(format: "%.\(digits)f", value)
        if text.contains(".") {
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text.removeLast() }
        }
        return text == "-0" ? "0" : text
    }
}
