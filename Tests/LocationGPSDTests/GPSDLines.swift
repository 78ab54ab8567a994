import Foundation
import LocationCore

/// gpsd protocol lines, as gpsd 3.22 writes them, for stand-in servers.
enum GPSDLines {
    static let version = #"{"class":"VERSION","release":"3.22","rev":"3.22","proto_major":3,"proto_minor":14}"#
    static let devices = #"{"class":"DEVICES","devices":[{"class":"DEVICE","path":"/dev/ttyFAKE","driver":"NMEA0183","activated":"2024-05-01T06:00:00.000Z","flags":1,"native":0,"bps":9600,"parity":"N","stopbits":1,"cycle":1.00}]}"#
    static let noDevices = #"{"class":"DEVICES","devices":[]}"#
    static let watch = #"{"class":"WATCH","enable":true,"json":true,"nmea":false,"raw":0,"scaled":false,"timing":false,"split24":false,"pps":false}"#
    /// What gpsd sends a client that asks to watch a device it does not have.
    static let noSuchDevice = #"{"class":"ERROR","message":"No such device as /dev/ttyNONE"}"#

    /// The greeting gpsd sends a client that WATCHes: VERSION, DEVICES, WATCH.
    static let greeting = [version, devices, watch].map { $0 + "\n" }.joined()

    /// 2024-05-01T06:00:00Z: the time of epoch 0.
    static let baseSeconds = 1_714_543_200

    /// The fix time `milliseconds` after ``baseSeconds``, as gpsd writes it.
    static func time(_ milliseconds: Int) -> String {
        let seconds = baseSeconds + milliseconds / 1000
        var parts = tm()
        var value = time_t(seconds)
        gmtime_r(&value, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
            parts.tm_hour, parts.tm_min, parts.tm_sec, milliseconds % 1000)
    }

    /// Milliseconds after ``baseSeconds`` of a delivered location, to compare times exactly.
    static func milliseconds(_ location: Location) -> Int {
        Int(((location.timestamp.timeIntervalSince1970 - Double(baseSeconds)) * 1000).rounded())
    }

    /// The latitude of the fix at `milliseconds`: a slow walk north, so each fix is recognisable.
    static func latitude(_ milliseconds: Int) -> Double { 51.5 + Double(milliseconds) * 1e-7 }

    /// A complete 3D TPV at `milliseconds`, with `extra` members added before the closing brace.
    static func tpv(_ milliseconds: Int, extra: String = "") -> String {
        let latitude = String(format: "%.9f", latitude(milliseconds))
        return #"{"class":"TPV","device":"/dev/ttyFAKE","mode":3,"time":""# + time(milliseconds)
            + #"","ept":0.005,"lat":"# + latitude + #","lon":-0.100000000,"altHAE":82.0000,"altMSL":35.0000,"#
            + #""epx":3.000,"epy":4.000,"epv":9.000,"track":45.0000,"speed":1.389,"climb":0.000,"eps":0.50"#
            + extra + "}"
    }

    /// A SKY that reports 9 satellites used and the given HDOP.
    static func sky(hdop: String = "0.90") -> String {
        let used = (0..<9).map { #"{"PRN":\#($0 + 1),"el":45.0,"az":\#($0 * 40).0,"ss":40.0,"used":true}"# }
        return #"{"class":"SKY","device":"/dev/ttyFAKE","hdop":"# + hdop + #","vdop":1.20,"pdop":1.50,"satellites":["#
            + used.joined(separator: ",") + "]}"
    }
}
