import Foundation
import LocationCore
import LocationDevSupport

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// The FoundationXML peer: `XMLParser(contentsOf:)` (which streams; `XMLParser(data:)` fails over 10 MB on
/// Linux) with a delegate that extracts what LocationGPX extracts from each `<trkpt>`: latitude,
/// longitude, `<ele>` and `<time>`, the time parsed with the same RFC 3339 parser.
package final class FoundationXMLReader: NSObject, XMLParserDelegate {
    private enum Field { case none, elevation, time }

    private var field = Field.none
    private var text = ""
    private var latitude = Double.nan, longitude = Double.nan, elevation: Double?, time: Date?
    /// Track points read.
    package private(set) var points = 0
    /// Track points that carried a valid time.
    package private(set) var timed = 0
    /// A checksum of the extracted values, so the work cannot be skipped.
    package private(set) var checksum = 0.0

    private override init() {}

    /// Reads the file at `path`; returns (points, timed points).
    package static func read(path: String) throws -> (points: Int, timed: Int) {
        guard let parser = XMLParser(contentsOf: URL(fileURLWithPath: path)) else {
            throw BenchError("XMLParser cannot open \(path)")
        }
        let reader = FoundationXMLReader()
        parser.delegate = reader
        parser.shouldProcessNamespaces = true
        guard parser.parse() else {
            throw BenchError("XMLParser failed: \(parser.parserError.map { "\($0)" } ?? "unknown error")")
        }
        return (reader.points, reader.timed)
    }

    package func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
        qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]
    ) {
        switch elementName {
        case "trkpt":
            latitude = attributeDict["lat"].flatMap(Double.init) ?? .nan
            longitude = attributeDict["lon"].flatMap(Double.init) ?? .nan
            elevation = nil
            time = nil
        case "ele":
            field = .elevation
            text = ""
        case "time":
            field = .time
            text = ""
        default:
            field = .none
        }
    }

    package func parser(_ parser: XMLParser, foundCharacters string: String) {
        if field != .none { text += string }
    }

    package func parser(
        _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?
    ) {
        switch elementName {
        case "ele":
            elevation = Double(text.trimmingCharacters(in: .whitespacesAndNewlines))
        case "time":
            time = TimestampProbe.date(parsing: text)
        case "trkpt":
            points += 1
            if let time {
                timed += 1
                checksum += time.timeIntervalSince1970
            }
            checksum += latitude + longitude + (elevation ?? 0)
        default:
            break
        }
        field = .none
    }
}
