import Foundation
import LocationControl
import LocationCore
import LocationService

/// A sky view as `locationctl sky` prints it: a text table for people, a JSON line for scripts.
enum SkyViewText {
    /// The view as lines for a terminal: a heading, then one line per satellite, used ones first (then by
    /// signal, strongest first), as cgps shows them.
    ///
    /// ```
    /// 2026-11-28 06:00:00Z  9 of 14 satellites used  HDOP 0.9  VDOP 1.3  PDOP 1.6  /dev/ttyACM0
    ///   PRN  sys   elev   azim  signal  used
    ///    12  GP     67°   231°   44 dB  yes
    ///    70  GL     12°    34°       –  no
    /// ```
    static func lines(_ view: SkyView) -> [String] {
        var heading = view.time.map { RFC3339.string(from: $0, fractionDigits: 0).replacingOccurrences(of: "T", with: " ") + "  " } ?? ""
        heading += "\(view.usedCount) of \(view.satellites.count.counted("satellite")) used"
        for (name, value) in [("HDOP", view.hdop), ("VDOP", view.vdop), ("PDOP", view.pdop)] {
            if let value { heading += String(format: "  %@ %.1f", name, value) }
        }
        if let source = view.source { heading += "  " + TerminalText.escaped(source) }
        var lines = [heading, "  PRN  sys   elev   azim  signal  used"]
        let ordered = view.satellites.sorted { lhs, rhs in
            if lhs.isUsed != rhs.isUsed { return lhs.isUsed }
            if (lhs.signalStrength ?? -1) != (rhs.signalStrength ?? -1) { return (lhs.signalStrength ?? -1) > (rhs.signalStrength ?? -1) }
            return lhs.prn < rhs.prn
        }
        for satellite in ordered {
            let system = satellite.constellation?.label ?? "–"
            let elevation = satellite.elevation.map { String(format: "%.0f°", $0) } ?? "–"
            let azimuth = satellite.azimuth.map { String(format: "%.0f°", $0) } ?? "–"
            let signal = satellite.signalStrength.map { String(format: "%.0f dB", $0) } ?? "–"
            lines.append(
                pad(String(satellite.prn), 5) + "  " + system.padding(toLength: 3, withPad: " ", startingAt: 0) + " "
                    + pad(elevation, 6) + " " + pad(azimuth, 6) + " " + pad(signal, 7) + "  " + (satellite.isUsed ? "yes" : "no"))
        }
        return lines
    }

    /// The view as one JSON line (see `SkyViewJSON`, the encoding locationd's `sky` reply uses too).
    static func jsonLine(_ view: SkyView) -> String {
        SkyViewJSON.object(view)
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        String(repeating: " ", count: max(0, width - text.count)) + text
    }
}
