import Foundation
import LocationCore
import Testing

/// The shared real-data folder beside the package root, and gpsd's expected output for each capture.
enum TestData {
    /// `../shared/testdata/gpsd` beside the package root, when present.
    static let gpsdFolder: URL? = {
        let packageRoot = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let folder = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/testdata/gpsd")
        guard FileManager.default.fileExists(atPath: folder.appendingPathComponent("MANIFEST.tsv").path) else {
            return nil
        }
        return folder
    }()

    /// Why a test that replays a capture did not run.
    static let missing: Comment = "the receiver captures are not at ../shared/testdata/gpsd beside the checkout"

    /// A capture's path.
    static func log(_ name: String) -> URL? {
        gpsdFolder?.appendingPathComponent(name)
    }

    /// One epoch gpsd's oracle reports with a fix.
    struct ExpectedFix: Sendable, Hashable {
        var time: Date
        var latitude: Double
        var longitude: Double
        /// The other numeric fields of the epoch's last TPV, by gpsd's JSON names (altMSL, eph, ...).
        var fields: [String: Double] = [:]
    }

    /// The TPV fields compared with a delivered ``Location``, with the location's value for each.
    static let comparedFields: [(json: String, value: @Sendable (Location) -> Double?)] = [
        ("altMSL", { $0.altitude }), ("altHAE", { $0.ellipsoidalAltitude }), ("eph", { $0.horizontalAccuracy }),
        ("epv", { $0.verticalAccuracy }), ("speed", { $0.speed }), ("eps", { $0.speedAccuracy }),
        ("track", { $0.course }), ("epd", { $0.courseAccuracy }), ("climb", { $0.climb }),
    ]

    /// The fixes of `name.chk`: one per distinct time among TPVs with mode ≥ 2, time and position.
    static func expectedFixes(_ name: String) throws -> [ExpectedFix] {
        guard let url = log(name + ".chk") else { return [] }
        let text = try String(contentsOf: url, encoding: .utf8)
        var byTime: [Date: ExpectedFix] = [:]
        for line in text.split(whereSeparator: \.isNewline) where line.hasPrefix("{\"class\":\"TPV\"") {
            // gpsd's JSON is flat for the fields used here; Foundation's parser rejects some lines.
            guard let modeText = field("mode", in: line), let mode = Int(modeText), mode >= 2,
                let timeText = field("time", in: line), let time = RFC3339.parse(timeText)?.date,
                let latitude = field("lat", in: line).flatMap(Double.init),
                let longitude = field("lon", in: line).flatMap(Double.init)
            else { continue }
            var fields: [String: Double] = [:]
            for (name, _) in comparedFields {
                if let value = field(name, in: line).flatMap(Double.init) { fields[name] = value }
            }
            byTime[time] = ExpectedFix(time: time, latitude: latitude, longitude: longitude, fields: fields)
        }
        return byTime.values.sorted { $0.time < $1.time }
    }

    /// The raw value of `"key":value` in one flat JSON line, without quotes.
    private static func field(_ key: String, in line: Substring) -> String? {
        guard let range = line.range(of: "\"\(key)\":") else { return nil }
        let rest = line[range.upperBound...]
        let end = rest.firstIndex(where: { $0 == "," || $0 == "}" }) ?? rest.endIndex
        return String(rest[..<end]).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
    }
}
