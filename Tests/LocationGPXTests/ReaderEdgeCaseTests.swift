import Foundation
import LocationCore
import Testing

@testable import LocationGPX

@Suite struct ReaderEdgeCaseTests {
    // MARK: - Versions, namespaces, encodings, layout

    static let onePoint = #"<trk><trkseg><trkpt lat="47.5" lon="8.25"><ele>400.5</ele><time>2024-05-01T06:00:00Z</time></trkpt></trkseg></trk>"#

    @Test func gpx10And11AndNoNamespaceAndNoVersion() throws {
        let documents = [
            gpx11(Self.onePoint),
            #"<gpx version="1.0" xmlns="http://www.topografix.com/GPX/1/0">\#(Self.onePoint)</gpx>"#,
            "<gpx>\(Self.onePoint)</gpx>",
            // A prefixed GPX namespace works too: names are matched by URI.
            #"<g:gpx xmlns:g="http://www.topografix.com/GPX/1/1"><g:trk><g:trkseg><g:trkpt lat="47.5" lon="8.25"><g:ele>400.5</g:ele><g:time>2024-05-01T06:00:00Z</g:time></g:trkpt></g:trkseg></g:trk></g:gpx>"#,
        ]
        for document in documents {
            let points = try parse(document)
            #expect(points.count == 1, "\(document)")
            #expect(points.first?.latitude == 47.5)
            #expect(points.first?.elevation == 400.5)
            #expect(points.first?.time == date("2024-05-01T06:00:00Z"))
        }
    }

    @Test func elementsOfOtherNamespacesAreNotGPX() throws {
        // <x:ele> in a foreign namespace is not GPX's <ele>, and an undeclared prefix is not GPX either.
        let document = gpx11(
            #"<wpt lat="1" lon="2"><x:ele>5</x:ele><y:time>2024-05-01T06:00:00Z</y:time></wpt>"#,
            namespaces: #" xmlns:x="urn:other""#)
        let points = try parse(document)
        #expect(points.count == 1)
        #expect(points[0].elevation == nil)
        #expect(points[0].time == nil)
    }

    @Test func encodings() throws {
        let latin1Name: [UInt8] = Array("Z".utf8) + [0xFC] + Array("rich".utf8)  // "Zürich" in ISO-8859-1
        let latin1 =
            Array(#"<?xml version="1.0" encoding="ISO-8859-1"?><gpx><wpt lat="47.37" lon="8.54"><name>"#.utf8)
            + latin1Name + Array("</name></wpt></gpx>".utf8)
        #expect(try parse(bytes: latin1).first?.name == "Zürich")

        let text = #"<?xml version="1.0" encoding="UTF-16"?><gpx><wpt lat="47.37" lon="8.54"><name>Zürich</name></wpt></gpx>"#
        let utf16LE: [UInt8] = [0xFF, 0xFE] + text.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        let utf16BE: [UInt8] = [0xFE, 0xFF] + text.utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        for bytes in [utf16LE, utf16BE] {
            for chunk in [1, 3, 1 << 18] {
                let points = try parse(bytes: bytes, chunkSize: chunk)
                #expect(points.first?.name == "Zürich")
                #expect(points.first?.latitude == 47.37)
            }
        }

        let bom: [UInt8] = [0xEF, 0xBB, 0xBF] + Array("<gpx><wpt lat=\"1\" lon=\"2\"/></gpx>".utf8)
        #expect(try parse(bytes: bom).count == 1)
    }

    @Test func crlfTabsAndNoDeclaration() throws {
        let document = "<gpx>\r\n\t<trk>\r\n\t\t<trkseg>\r\n\t\t\t<trkpt lat=\"1\" lon=\"2\">\r\n\t\t\t\t<ele>\r\n 3 \r\n</ele>\r\n\t\t\t\t<time>\r\n2024-05-01T06:00:00Z\r\n</time>\r\n\t\t\t</trkpt>\r\n\t\t</trkseg>\r\n\t</trk>\r\n</gpx>\r\n"
        let points = try parse(document)
        #expect(points.count == 1)
        #expect(points[0].elevation == 3)
        #expect(points[0].time == date("2024-05-01T06:00:00Z"))
        #expect(points[0].line == 4)
    }

    @Test func attributesInAnyOrderAndLongDecimals() throws {
        let lat = "47.123456789012345678901234567890"
        let lon = "-122.98765432109876543210987654321"
        let points = try parse(gpx11(#"<wpt lon="\#(lon)" lat="\#(lat)" />"#))
        #expect(points[0].latitude == Double(lat)!)
        #expect(points[0].longitude == Double(lon)!)
    }

    @Test func numberSyntax() {
        func number(_ text: String) -> Double? {
            var text = text
            return text.withUTF8 { GPXNumber.parseDouble($0) }
        }
        #expect(number("1") == 1)
        #expect(number(" -0.5 ") == -0.5)
        #expect(number("+2.") == 2)
        #expect(number(".25") == 0.25)
        #expect(number("1e3") == 1000)
        #expect(number("1.5E-2") == 0.015)
        #expect(number("-0")?.sign == .minus)
        #expect(number("0.1") == 0.1)
        #expect(number("123456789012345678901234567890") == 123456789012345678901234567890.0)
        #expect(number("0.000000000000000000000000000001") == 1e-30)
        #expect(number("9007199254740993") == 9007199254740993.0)
        for bad in ["", " ", "nan", "NaN", "inf", "-inf", "0x10", "1e", "1e+", "--1", "1.2.3", "1 2", "abc", ".", "1e999"] {
            #expect(number(bad) == nil, "\(bad)")
        }
        // Random doubles read back exactly from their shortest text.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<10_000 {
            let value = Double(bitPattern: generator.next() & 0x7FEF_FFFF_FFFF_FFFF) * (Bool.random() ? 1 : -1)
            #expect(number(value.description) == value, "\(value)")
            var decimal: [UInt8] = []
            GPXNumber.appendDecimal(value, to: &decimal)
            #expect(number(String(decoding: decimal, as: UTF8.self)) == value, "\(value)")
        }
    }

    @Test func decimalFormatting() {
        func format(_ value: Double) -> String {
            var out: [UInt8] = []
            GPXNumber.appendDecimal(value, to: &out)
            return String(decoding: out, as: UTF8.self)
        }
        #expect(format(47.5) == "47.5")
        #expect(format(31) == "31")
        #expect(format(-0.0) == "-0")
        #expect(format(0) == "0")
        #expect(format(1e-5) == "0.00001")
        #expect(format(1.5e-7) == "0.00000015")
        #expect(format(1e16) == "10000000000000000")
        #expect(format(123456.789) == "123456.789")
        #expect(format(0.1) == "0.1")
        #expect(format(-122.98765432109876) == "-122.98765432109876")
    }

    // MARK: - Times

    @Test(arguments: [
        ("2024-05-01T06:00:00Z", "2024-05-01T06:00:00Z", true),
        ("2024-05-01T06:00:26.000Z", "2024-05-01T06:00:26Z", true),
        ("2016-05-27T10:08:47.8Z", "2016-05-27T10:08:47.8Z", true),
        ("2021-03-04T12:34:53.7176739Z", "2021-03-04T12:34:53.7176739Z", true),
        ("2024-05-01T07:00:13.994+01:00", "2024-05-01T06:00:13.994Z", true),
        ("2024-05-01T01:00:00-05:00", "2024-05-01T06:00:00Z", true),
        ("2003-06-29T00:00:00", "2003-06-29T00:00:00Z", false),
        ("2024-05-01 06:00:00Z", "2024-05-01T06:00:00Z", true),
        ("2024-05-01T06:00:00.123456789Z", "2024-05-01T06:00:00.123456789Z", true),
    ])
    func timeVariants(_ text: String, _ utc: String, _ hasZone: Bool) throws {
        let points = try parse(gpx11(#"<wpt lat="1" lon="2"><time>\#(text)</time></wpt>"#))
        #expect(points[0].time == date(utc))
        #expect(points[0].timeHasZone == hasZone)
    }

    // MARK: - Fields and extensions

    @Test func gpx10SpeedAndCourse() throws {
        let points = try parse(
            #"<gpx version="1.0" xmlns="http://www.topografix.com/GPX/1/0"><trk><trkseg><trkpt lat="1" lon="2"><speed>3.5</speed><course>271.25</course></trkpt></trkseg></trk></gpx>"#
        )
        #expect(points[0].speed == 3.5)
        #expect(points[0].course == 271.25)
        #expect(try points[0].location(timestampIfUntimed: .distantPast).speed == 3.5)
    }

    @Test func garminTrackPointExtensionByURINotPrefix() throws {
        // v1 under the unusual prefix ns3; the same v1 URI bound to a second prefix; v2 speed and course;
        // and a "gpxtpx" prefix bound to some other URI, which must be ignored.
        let document = gpx11(
            """
            <trk><trkseg>
            <trkpt lat="1" lon="2"><extensions><ns3:TrackPointExtension><ns3:hr>142</ns3:hr><tpx:cad>88</tpx:cad>
              <ns3:atemp>21.5</ns3:atemp><ns3:wtemp>14</ns3:wtemp><ns3:depth>3.25</ns3:depth></ns3:TrackPointExtension></extensions></trkpt>
            <trkpt lat="1" lon="2"><extensions><v2:TrackPointExtension><v2:speed>4.5</v2:speed><v2:course>90.5</v2:course></v2:TrackPointExtension></extensions></trkpt>
            <trkpt lat="1" lon="2"><extensions><gpxtpx:TrackPointExtension><gpxtpx:hr>99</gpxtpx:hr></gpxtpx:TrackPointExtension></extensions></trkpt>
            </trkseg></trk>
            """,
            namespaces: """
                 xmlns:ns3="http://www.garmin.com/xmlschemas/TrackPointExtension/v1" \
                xmlns:tpx="http://www.garmin.com/xmlschemas/TrackPointExtension/v1" \
                xmlns:v2="http://www.garmin.com/xmlschemas/TrackPointExtension/v2" \
                xmlns:gpxtpx="urn:not-garmin"
                """)
        let points = try parse(document)
        #expect(points[0].heartRate == 142)
        #expect(points[0].cadence == 88)
        #expect(points[0].airTemperature == 21.5)
        #expect(points[0].waterTemperature == 14)
        #expect(points[0].depth == 3.25)
        #expect(points[1].speed == 4.5)
        #expect(points[1].course == 90.5)
        #expect(points[2].heartRate == nil)
    }

    @Test func ourLocationExtension() throws {
        let document = gpx11(
            """
            <trk><trkseg><trkpt lat="1" lon="2"><ele>10</ele><time>2024-05-01T06:00:00Z</time><src>/dev/ttyACM0</src>
            <fix>3d</fix><sat>9</sat><extensions><q:speed>1.5</q:speed><q:course>45</q:course>
            <q:horizontalAccuracy>3.5</q:horizontalAccuracy><q:verticalAccuracy>5</q:verticalAccuracy>
            <q:speedAccuracy>0.25</q:speedAccuracy><q:courseAccuracy>7.5</q:courseAccuracy><q:climb>-0.5</q:climb>
            <q:ellipsoidalAltitude>57.25</q:ellipsoidalAltitude><q:simulated>true</q:simulated></extensions></trkpt></trkseg></trk>
            """, namespaces: #" xmlns:q="https://swift-location.dev/xmlns/gpx-location/1""#)
        let location = try #require(try parse(document).first).location()
        #expect(
            location
                == Location(
                    latitude: 1, longitude: 2, altitude: 10, ellipsoidalAltitude: 57.25, horizontalAccuracy: 3.5,
                    verticalAccuracy: 5, speed: 1.5, speedAccuracy: 0.25, course: 45, courseAccuracy: 7.5, climb: -0.5,
                    timestamp: date("2024-05-01T06:00:00Z"), fixMode: .threeDimensional, satellitesUsed: 9,
                    source: "/dev/ttyACM0", isSimulated: true))
    }

    @Test func missingAndEmptyValuesStayNil() throws {
        let points = try parse(
            gpx11(#"<wpt lat="1" lon="2"><ele></ele><time> </time><sat/><fix></fix></wpt><wpt lat="3" lon="4"/>"#))
        #expect(points.count == 2)
        for point in points {
            #expect(point.elevation == nil && point.time == nil && point.satellites == nil && point.fix == nil)
        }
    }

    @Test func onlyDirectChildrenAreFields() throws {
        // <ele> inside <extensions> or <link> of a no-namespace file is not the point's elevation.
        let points = try parse(
            #"<gpx><wpt lat="1" lon="2"><extensions><ele>99</ele></extensions><link href="x"><time>2024-05-01T06:00:00Z</time></link></wpt></gpx>"#
        )
        #expect(points[0].elevation == nil)
        #expect(points[0].time == nil)
    }

    @Test func contextNumbering() throws {
        let document = gpx11(
            """
            <wpt lat="0" lon="0"/><wpt lat="0" lon="1"/>
            <rte><rtept lat="1" lon="0"/><rtept lat="1" lon="1"/></rte><rte><rtept lat="2" lon="0"/></rte>
            <trk><trkseg><trkpt lat="3" lon="0"/></trkseg><trkseg/><trkseg><trkpt lat="3" lon="1"/><trkpt lat="3" lon="2"/></trkseg></trk>
            <trk><trkseg><trkpt lat="4" lon="0"/></trkseg></trk>
            """)
        let points = try parse(document)
        let summary = points.map { "\($0.kind.rawValue) \($0.container).\($0.segment).\($0.index)" }
        #expect(
            summary == [
                "wpt 0.0.0", "wpt 0.0.1", "rtept 0.0.0", "rtept 0.0.1", "rtept 1.0.0", "trkpt 0.0.0", "trkpt 0.2.0",
                "trkpt 0.2.1", "trkpt 1.0.0",
            ])
    }

    @Test func chunkBoundariesDoNotMatter() throws {
        let text = gpx11(Self.onePoint + "<wpt lat=\"1\" lon=\"2\"><name>a &amp; b</name></wpt>")
        let whole = try parse(text)
        #expect(whole.count == 2)
        for chunk in [1, 2, 3, 5, 7, 64, 1000] {
            #expect(try parse(text, chunkSize: chunk) == whole, "chunk size \(chunk)")
        }
    }

    @Test(.enabled(if: TestData.isAvailable, "real GPX files not found: set GPX_TESTDATA or check ../shared/testdata/gpx"))
    func chunkBoundariesDoNotMatterInARealFile() throws {
        let text = try String(contentsOfFile: TestData.path("gpxpy__gpx1.1_with_all_fields.gpx"), encoding: .utf8)
        let whole = try parse(text)
        #expect(whole.count == 8, "1 track point, 5 route points, 2 waypoints")
        for chunk in [1, 2, 3, 5, 7, 64, 1000] {
            #expect(try parse(text, chunkSize: chunk) == whole, "chunk size \(chunk)")
        }
    }

    @Test func predefinedCharacterAndInternalEntitiesAndCDATA() throws {
        let document = """
            <?xml version="1.0"?>
            <!DOCTYPE gpx [ <!ENTITY home "Home &amp; garden"> ]>
            <gpx><wpt lat="1" lon="2"><name>&home; &#x263A; &lt;3</name><desc>x</desc></wpt>
            <wpt lat="3" lon="4"><name><![CDATA[a<b]]></name><time><![CDATA[2024-05-01T06:00:00Z]]></time></wpt></gpx>
            """
        let points = try parse(document)
        #expect(points[0].name == "Home & garden ☺ <3")
        #expect(points[1].name == "a<b")
        #expect(points[1].time == date("2024-05-01T06:00:00Z"))
    }

    // MARK: - Errors: file, line, column, what

    @Test func emptyFiles() {
        for text in ["", "   \n\t  "] {
            let error = parseError(text)
            #expect(error?.code == .empty, "\(String(describing: error))")
        }
    }

    @Test func malformedXMLNamesLineAndColumn() throws {
        let text = "<gpx>\n<trk><trkseg>\n<trkpt lat=\"1\" lon=\"2\"></trkseg>\n</trk></gpx>"
        let error = try #require(parseError(text))
        #expect(error.code == .malformedXML)
        #expect(error.line == 3)
        #expect(error.column != nil)
        #expect(error.description.hasPrefix("test.gpx:3:"), "\(error)")
        #expect(error.description.contains("trkpt"), "\(error)")
        #expect(error.locationError.code == .invalidData)
    }

    @Test(arguments: [
        (#"lat="91" lon="0""#, GPXError.Code.invalidCoordinate, "latitude"),
        (#"lat="-90.0000001" lon="0""#, .invalidCoordinate, "[-90, 90]"),
        (#"lat="0" lon="180.5""#, .invalidCoordinate, "[-180, 180]"),
        (#"lat="abc" lon="0""#, .invalidCoordinate, "not a number"),
        (#"lat="NaN" lon="0""#, .invalidCoordinate, "not a number"),
        (#"lat="" lon="0""#, .invalidCoordinate, "not a number"),
        (#"lon="0""#, .missingCoordinate, "no lat"),
        (#"lat="0""#, .missingCoordinate, "no lon"),
        (#"x="1""#, .missingCoordinate, "no lat and lon"),
    ])
    func badCoordinates(_ attributes: String, _ code: GPXError.Code, _ words: String) throws {
        let text = "<gpx>\n<trk><trkseg>\n<trkpt lat=\"1\" lon=\"1\"/>\n<trkpt \(attributes)/>\n</trkseg></trk></gpx>"
        let error = try #require(parseError(text))
        #expect(error.code == code)
        #expect(error.line == 4)
        #expect(error.message.contains(words), "\(error)")
    }

    @Test(arguments: ["2023-02-29T00:00:00Z", "2024-13-01T00:00:00Z", "2024-04-31T00:00:00Z", "2024-05-01T24:00:00Z", "yesterday", "2024-05-01"])
    func impossibleDates(_ time: String) throws {
        let text = "<gpx>\n<wpt lat=\"1\" lon=\"2\">\n<time>\(time)</time>\n</wpt></gpx>"
        let error = try #require(parseError(text))
        #expect(error.code == .invalidTime)
        #expect(error.line == 3)
        #expect(error.message.contains(time))
    }

    @Test(arguments: [
        ("<ele>high</ele>", "<ele>"), ("<sat>-1</sat>", "<sat>"), ("<sat>4.5</sat>", "<sat>"), ("<fix>4d</fix>", "<fix>"),
        ("<hdop>1,5</hdop>", "<hdop>"),
    ])
    func badFieldValues(_ field: String, _ words: String) throws {
        let error = try #require(parseError(gpx11(#"<wpt lat="1" lon="2">\#(field)</wpt>"#)))
        #expect(error.code == .invalidValue)
        #expect(error.message.contains(words), "\(error)")
    }

    @Test func notGPX() throws {
        for (text, column, root) in [
            (#"<kml xmlns="http://www.opengis.net/kml/2.2"><Placemark/></kml>"#, 44, "<kml> in namespace http://www.opengis.net/kml/2.2"),
            ("<html><body>hello</body></html>", 6, "<html>"),
            (#"<gpx xmlns="urn:something-else"><wpt lat="1" lon="2"/></gpx>"#, 32, "<gpx> in namespace urn:something-else"),
        ] {
            let error = try #require(parseError(text))
            #expect(error.code == .notGPX, "\(error)")
            #expect(error.description == "test.gpx:1:\(column): the root element is \(root), not a GPX <gpx>")
        }
        for text in ["hello, world", "{\"lat\": 1}", "\u{1}\u{2}\u{3}binary"] {
            let error = try #require(parseError(text))
            #expect(error.code == .malformedXML, "\(error)")
            #expect(error.description == "test.gpx:1:1: the file is not XML: no element where the document should start")
        }
    }

    @Test func misplacedPoints() throws {
        for body in [
            #"<trk><trkpt lat="1" lon="2"/></trk>"#,
            #"<rtept lat="1" lon="2"/>"#,
            #"<trk><trkseg><wpt lat="1" lon="2"/></trkseg></trk>"#,
            #"<trk><trkseg><trkpt lat="1" lon="2"><trkpt lat="1" lon="2"/></trkpt></trkseg></trk>"#,
        ] {
            let error = try #require(parseError(gpx11(body)))
            #expect(error.code == .misplacedElement, "\(error)")
        }
    }

    @Test func unreadableFile() throws {
        let missing = #expect(throws: GPXError.self) { try GPXReader(contentsOf: "/nonexistent/track.gpx") }
        #expect(missing?.code == .io, "\(String(describing: missing))")
        #expect(missing?.description == "/nonexistent/track.gpx: cannot open the file: No such file or directory")
        #expect(missing?.locationError.code == .sourceUnavailable)
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let reader = try GPXReader(contentsOf: directory)  // a directory opens, but cannot be read
        let unreadable = #expect(throws: GPXError.self) { try reader.next() }
        #expect(unreadable?.code == .io, "\(String(describing: unreadable))")
        #expect(unreadable?.description == "\(directory): cannot read the file: Is a directory")
        #expect(unreadable?.locationError.code == .sourceUnavailable)
    }
}
