import Foundation
import LocationControl
import LocationCore

/// OwnTracks JSON, as its apps write it and its Recorder, Home Assistant's OwnTracks integration and Traccar
/// read it (the OwnTracks booklet, "JSON").
enum OwnTracksMessage {
    /// The accuracy sent when the receiver reported neither an accuracy nor an HDOP, metres: `acc` must be
    /// there and at least 1 (Home Assistant drops a location without it).
    static let unknownAccuracy = 50
    /// Metres of position error per unit of HDOP, to estimate `acc` when the receiver gave only an HDOP.
    static let metresPerHDOP = 5.0

    /// A location message: `_type`, `lat`, `lon`, `tst` (the fix time, whole seconds), `acc` (whole metres,
    /// at least 1), and `alt`, `vac`, `vel` (km/h), `cog` where the fix has them, then `tid` and `created_at`.
    /// `trigger` is OwnTracks' `t` (`r` answers `reportLocation`); absent for the automatic stream. `topic` is
    /// added in HTTP mode, where no MQTT topic says whose fix it is.
    static func location(
        _ fix: Location, trackerID: String, createdAt: Date, trigger: String? = nil, topic: String? = nil
    ) -> [UInt8] {
        var text = #"{"_type":"location","lat":"#
        text += number(fix.latitude)
        text += #","lon":"#
        text += number(fix.longitude)
        text += #","tst":"#
        text += String(seconds(fix.timestamp))
        text += #","acc":"#
        text += String(accuracy(of: fix))
        if let altitude = fix.altitude, let value = whole(altitude) { text += #","alt":\#(value)"# }
        if let vertical = fix.verticalAccuracy, let value = whole(vertical) { text += #","vac":\#(max(0, value))"# }
        if let speed = fix.speed, let value = whole(speed * 3.6) { text += #","vel":\#(max(0, value))"# }
        if let course = fix.course, let value = whole(course) { text += #","cog":\#(value % 360)"# }
        if let trigger { text += #","t":"\#(trigger)""# }
        text += #","tid":"\#(trackerID)","created_at":\#(seconds(createdAt))"#
        if let topic { text += #","topic":"# + JSONText.string(topic) }
        text += "}"
        return Array(text.utf8)
    }

    /// A transition message for a region's enter or exit (`leave`), at the fix that caused it:
    /// `{"_type":"transition","event","desc","lat","lon","tst","wtst","acc","tid","t":"c","rid"}`. `desc` is
    /// the region's name, as Home Assistant's OwnTracks integration matches it to a zone; `rid` is a
    /// stable id made from the name (OwnTracks' region id); `wtst` (the waypoint's creation time, which a
    /// region here does not have) is the fix time. Nil for a dwell, which OwnTracks does not know.
    static func transition(_ event: RegionEvent, trackerID: String, topic: String? = nil) -> [UInt8]? {
        let name: String
        switch event.kind {
        case .enter: name = "enter"
        case .exit: name = "leave"
        case .dwell: return nil
        }
        let fix = event.location
        let time = String(seconds(fix.timestamp))
        var text = #"{"_type":"transition","event":"\#(name)","desc":"#
        text += JSONText.string(event.region)
        text += #","lat":\#(number(fix.latitude)),"lon":\#(number(fix.longitude)),"tst":\#(time),"wtst":\#(time)"#
        text += #","acc":\#(accuracy(of: fix)),"tid":"\#(trackerID)","t":"c","rid":"\#(regionID(event.region))""#
        if let topic { text += #","topic":"# + JSONText.string(topic) }
        text += "}"
        return Array(text.utf8)
    }

    /// OwnTracks' `rid` for a region: 8 hex digits of the CRC-32 of its name, the same in every run.
    static func regionID(_ name: String) -> String {
        let crc = Array(name.utf8).withUnsafeBufferPointer { CRC32.checksum($0) }
        let hex = String(crc, radix: 16)
        return String(repeating: "0", count: 8 - hex.count) + hex
    }

    /// The will the broker publishes when the connection is lost: `{"_type":"lwt","tst":…}`.
    static func lastWill(connectedAt: Date) -> [UInt8] {
        Array(#"{"_type":"lwt","tst":\#(seconds(connectedAt))}"#.utf8)
    }

    /// `acc`: the horizontal accuracy, else an estimate from HDOP, else ``unknownAccuracy``; whole metres
    /// rounded up, at least 1.
    static func accuracy(of fix: Location) -> Int {
        let metres = fix.horizontalAccuracy ?? fix.hdop.map { $0 * metresPerHDOP }
        guard let metres, metres.isFinite, metres >= 0 else { return unknownAccuracy }
        return max(1, Int(min(metres.rounded(.up), 1e9)))
    }

    private static func seconds(_ date: Date) -> Int64 {
        let value = date.timeIntervalSince1970.rounded(.down)
        return value.isFinite ? Int64(max(-1e15, min(1e15, value))) : 0
    }

    private static func whole(_ value: Double) -> Int? {
        guard value.isFinite, abs(value) < 1e9 else { return nil }
        return Int(value.rounded())
    }

    /// A coordinate with up to 7 decimals (about a centimetre), never an exponent.
    private static func number(_ value: Double) -> String {
        var text = String(format: "%.7f", value)
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text == "-0" ? "0" : text
    }
}
