import CLibXML2
import Foundation
import LocationCore
import LocationTesting
import Testing

@testable import LocationGPX

@Suite struct WriterTests {
    static let full = Location(
        latitude: 47.123456789, longitude: 8.5, altitude: 400.25, ellipsoidalAltitude: 447.5,
        horizontalAccuracy: 3.5, verticalAccuracy: 5, speed: 1.25, speedAccuracy: 0.5, course: 271.5,
        courseAccuracy: 10, climb: -0.25, timestamp: Date(timeIntervalSince1970: 1_714_543_200.25),
        fixMode: .threeDimensional, satellitesUsed: 9, source: "/dev/ttyACM0 & <gps> \"1\"", isSimulated: true,
        hdop: 0.9, vdop: 1.4, pdop: 1.66)
    static let bare = Location(latitude: -33.9, longitude: 151.2, timestamp: Date(timeIntervalSince1970: 1_714_543_201))

    /// Random locations: every optional present or absent, awkward numbers, sub-second times.
    static func randomLocations(count: Int, seed: UInt64) -> [Location] {
        var random = SplitMix64(seed: seed)
        func maybe(_ value: @autoclosure () -> Double) -> Double? { random.next() % 3 == 0 ? nil : value() }
        return (0..<count).map { _ in
            let scale = [1.0, 1e-7, 1e7, 0.1][Int(random.next() % 4)]
            let precision = [1.0, 1e3, 1e6, 1e9][Int(random.next() % 4)]
            // 2005–2068. (Within about 97 days of 2001-01-01 a Date can carry sub-nanosecond bits, which no
            // RFC 3339 time with at most 9 fractional digits reproduces.)
            let seconds = 1.1e9 + (random.unit() * 2e9 * precision).rounded() / precision
            return Location(
                latitude: random.unit() * 180 - 90, longitude: random.unit() * 360 - 180,
                altitude: maybe(random.unit() * 9000 - 500), ellipsoidalAltitude: maybe(random.unit() * 9000),
                horizontalAccuracy: maybe(random.unit() * scale), verticalAccuracy: maybe(random.unit() * 100),
                speed: maybe(random.unit() * 300), speedAccuracy: maybe(random.unit()), course: maybe(random.unit() * 360),
                courseAccuracy: maybe(random.unit() * 180), climb: maybe(random.unit() * 20 - 10),
                timestamp: Date(timeIntervalSince1970: seconds),
                fixMode: [nil, .twoDimensional, .threeDimensional][Int(random.next() % 3)],
                satellitesUsed: random.next() % 2 == 0 ? nil : Int(random.next() % 40),
                source: random.next() % 2 == 0 ? nil : "gps \(random.next() % 1000) & <ünïcode> ☺\t\n\r",
                isSimulated: random.next() % 2 == 0,
                hdop: maybe(random.unit() * 50), vdop: maybe(random.unit() * 50), pdop: maybe(random.unit() * 50))
        }
    }

    // MARK: - Round trip

    @Test func roundTripThroughOurReaderIsLossless() throws {
        let locations = [Self.full, Self.bare] + Self.randomLocations(count: 5000, seed: 42)
        let bytes = try GPXWriter.document(for: locations)
        let read = try parse(bytes: bytes).map { try $0.location() }
        #expect(read.count == locations.count)
        for (written, back) in zip(locations, read) where written != back {
            let times = "\(written.timestamp.timeIntervalSinceReferenceDate) \(back.timestamp.timeIntervalSinceReferenceDate)"
            Issue.record("written \(written)\nread    \(back)\ntimes \(times)")
            break
        }
    }

    @Test func fileWriterTracksAndSegments() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = "\(directory)/out.gpx"
        let writer = try GPXWriter(path: path, creator: "tests", metadataTime: Date(timeIntervalSince1970: 0))
        try writer.write(Self.bare)  // opens a track and a segment by itself
        try writer.beginSegment()
        try writer.write(Self.full)
        try writer.write(Self.bare)
        try writer.beginTrack(name: "second & last")
        try writer.write(Self.full)
        try writer.finish()
        try writer.finish()  // again: nothing happens
        let closed = #expect(throws: GPXError.self) { try writer.write(Self.bare) }
        #expect(closed?.code == .writerClosed, "\(String(describing: closed))")
        #expect(closed?.message == "the writer was already finished")

        let points = try GPXReader.readPoints(contentsOf: path)
        #expect(points.map { "\($0.container).\($0.segment).\($0.index)" } == ["0.0.0", "0.1.0", "0.1.1", "1.0.0"])
        #expect(try points.map { try $0.location() } == [Self.bare, Self.full, Self.bare, Self.full])
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.contains("<name>second &amp; last</name>"))
        #expect(text.contains(#"creator="tests""#))
        #expect(text.contains("<metadata>\n    <time>1970-01-01T00:00:00Z</time>"))
    }

    @Test func streamsInBoundedPieces() throws {
        var pieces: [Int] = []
        let writer = try GPXWriter { pieces.append($0.count) }
        for location in Self.randomLocations(count: 20_000, seed: 7) { try writer.write(location) }
        try writer.finish()
        #expect(pieces.count > 20)
        #expect(pieces.allSatisfy { $0 < 70_000 })
    }

    @Test func antimeridianIsWrittenAsMinus180() throws {
        let location = Location(latitude: 0, longitude: 180, timestamp: Date(timeIntervalSince1970: 0))
        let back = try parse(bytes: GPXWriter.document(for: [location]))
        #expect(back[0].longitude == -180)
    }

    @Test func textIsEscapedAndControlCharactersReplaced() throws {
        var location = Self.bare
        location.source = "a\u{1}b\rc"
        let bytes = try GPXWriter.document(for: [location])
        #expect(String(decoding: bytes, as: UTF8.self).contains("<src>a\u{FFFD}b&#13;c</src>"))
        #expect(try parse(bytes: bytes)[0].sourceName == "a\u{FFFD}b\rc")
    }

    @Test func nonFiniteOptionalsAreLeftOut() throws {
        var location = Self.bare
        location.speed = .nan
        location.altitude = .infinity
        let back = try parse(bytes: GPXWriter.document(for: [location]))
        #expect(back[0].speed == nil && back[0].elevation == nil)
    }

    // MARK: - Errors

    @Test func invalidLocationsAreRefusedAndNothingIsWritten() throws {
        var pieces: [[UInt8]] = []
        let writer = try GPXWriter { pieces.append($0) }
        // Each refused for what is wrong with it: the coordinate, or a time GPX cannot hold.
        for (bad, reason) in [
            (Location(latitude: 91, longitude: 0, timestamp: Date()), "coordinate (91.0, 0.0) is outside [-90, 90] × [-180, 180]"),
            (Location(latitude: 0, longitude: -180.5, timestamp: Date()), "coordinate (0.0, -180.5) is outside [-90, 90] × [-180, 180]"),
            (Location(latitude: .nan, longitude: 0, timestamp: Date()), "coordinate (nan, 0.0) is outside [-90, 90] × [-180, 180]"),
            (Location(latitude: 0, longitude: 0, timestamp: Date(timeIntervalSince1970: 1e12)), "lies outside the years 0001–9999 that GPX can hold"),
            (Location(latitude: 0, longitude: 0, timestamp: Date(timeIntervalSince1970: -7e10)), "lies outside the years 0001–9999 that GPX can hold"),
        ] {
            let error = #expect(throws: GPXError.self) { try writer.write(bad) }
            #expect(error?.code == .invalidLocation, "\(String(describing: error))")
            #expect(error?.message.hasSuffix(reason) == true, "\(String(describing: error))")
        }
        try writer.write(Self.bare)  // the writer is still usable
        try writer.finish()
        #expect(try parse(bytes: pieces.flatMap { $0 }).count == 1)
    }

    @Test func outputFailuresAreReported() throws {
        let unopened = #expect(throws: GPXError.self) { try GPXWriter(path: "/nonexistent/dir/out.gpx") }
        #expect(unopened?.code == .io, "\(String(describing: unopened))")
        #expect(unopened?.description == "/nonexistent/dir/out.gpx: cannot create the file: No such file or directory")
        struct Full: Error {}
        let writer = try GPXWriter { _ in throw Full() }
        try writer.write(Self.bare)
        let failed = #expect(throws: GPXError.self) { try writer.finish() }
        #expect(failed?.code == .io, "\(String(describing: failed))")
        #expect(failed?.message == "the output failed: Full()")
        // A writer whose output failed stays failed: each later use repeats that failure.
        let after = #expect(throws: GPXError.self) { try writer.write(Self.bare) }
        #expect(after != nil && after == failed, "\(String(describing: after))")
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/dev/full"), "this system has no /dev/full"))
    func aFullDeviceIsReported() throws {
        let full = try GPXWriter(path: "/dev/full")
        try full.write(Self.bare)
        let error = #expect(throws: GPXError.self) { try full.finish() }
        #expect(error?.code == .io, "\(String(describing: error))")
        #expect(error?.file == "/dev/full", "\(String(describing: error))")
    }

    // MARK: - Schema

    @Test func outputIsValidAgainstTheGPX11Schema() throws {
        let locations = [Self.full, Self.bare] + Self.randomLocations(count: 300, seed: 3)
        var bytes: [UInt8] = []
        let writer = try GPXWriter(metadataTime: Date(timeIntervalSince1970: 0)) { bytes.append(contentsOf: $0) }
        try writer.beginTrack(name: "a <track>")
        try writer.write(contentsOf: locations)
        try writer.beginSegment()
        try writer.write(Self.full)
        try writer.beginTrack()
        try writer.finish()
        let errors = validate(bytes, againstSchema: gpx11Schema)
        #expect(errors.isEmpty, "\(errors.prefix(5))")

        // The check itself catches mistakes: wrong order, a bad <fix>, a longitude of 180.
        let broken = String(decoding: bytes, as: UTF8.self)
            .replacingOccurrences(of: "<fix>3d</fix>", with: "<fix>4d</fix>")
        #expect(!validate(Array(broken.utf8), againstSchema: gpx11Schema).isEmpty)
        let misordered = gpx11(#"<trk><trkseg><trkpt lat="1" lon="180"><time>2024-05-01T06:00:00Z</time><ele>1</ele></trkpt></trkseg></trk>"#)
        #expect(validate(Array(misordered.utf8), againstSchema: gpx11Schema).count >= 2)
    }

    // MARK: - Other readers

    @Test(.enabled(if: ExternalTool.gpsbabel != nil, "gpsbabel is not installed (apt-get install gpsbabel): SKIPPED"))
    func gpsbabelReadsOurOutput() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let locations = [Self.full, Self.bare] + Self.randomLocations(count: 200, seed: 11)
        let input = "\(directory)/ours.gpx", output = "\(directory)/babel.gpx"
        try Data(GPXWriter.document(for: locations, trackName: "t")).write(to: URL(fileURLWithPath: input))
        let run = try ExternalTool.run(ExternalTool.gpsbabel!, ["-i", "gpx", "-f", input, "-o", "gpx", "-F", output])
        #expect(run.status == 0, "\(run.output)")
        #expect(!run.output.lowercased().contains("error"), "\(run.output)")
        // gpsbabel rewrote the track; read its file back and compare (it prints 9 decimals, millimetres).
        let back = try GPXReader.readPoints(contentsOf: output)
        try #require(back.count == locations.count)
        for (location, point) in zip(locations, back) {
            #expect(abs(point.latitude - location.latitude) <= 5e-10)
            #expect(abs(point.longitude - location.longitude) <= 5e-10)
            #expect(point.elevation.map { abs($0 - location.altitude!) <= 5e-4 } ?? (location.altitude == nil))
            #expect(abs(point.time!.timeIntervalSince(location.timestamp)) <= 5e-4)
            // gpsbabel passes our extension through untouched.
            #expect(point.speed == location.speed)
            #expect(point.horizontalAccuracy == location.horizontalAccuracy)
        }
    }

    @Test(.enabled(if: ExternalTool.hasGPXPy, "gpxpy is not installed (pip install gpxpy): SKIPPED"))
    func gpxpyReadsOurOutput() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let locations = [Self.full, Self.bare] + Self.randomLocations(count: 200, seed: 12)
        let input = "\(directory)/ours.gpx"
        try Data(GPXWriter.document(for: locations)).write(to: URL(fileURLWithPath: input))
        let script = """
            import json, sys, gpxpy
            g = gpxpy.parse(open(sys.argv[1], encoding='utf-8'))
            for t in g.tracks:
                for s in t.segments:
                    for p in s.points:
                        print(json.dumps({'lat': repr(p.latitude), 'lon': repr(p.longitude),
                            'ele': None if p.elevation is None else repr(p.elevation),
                            'time': p.time.timestamp(), 'fix': p.type_of_gpx_fix, 'sat': p.satellites,
                            'src': p.source,
                            'ext': {e.tag.split('}')[1]: e.text for e in p.extensions
                                    if e.tag.startswith('{https://swift-location.dev/xmlns/gpx-location/1}')}}))
            """
        let run = try ExternalTool.run(ExternalTool.python!, ["-c", script, input])
        #expect(run.status == 0, "\(run.output)")
        let lines = run.output.split(separator: "\n").filter { $0.hasPrefix("{") }
        try #require(lines.count == locations.count)
        for (location, line) in zip(locations, lines) {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            #expect(Double(object["lat"] as! String) == location.latitude)
            #expect(Double(object["lon"] as! String) == location.longitude)
            #expect((object["ele"] as? String).flatMap(Double.init) == location.altitude)
            #expect(abs((object["time"] as! Double) - location.timestamp.timeIntervalSince1970) < 1e-6)
            #expect((object["sat"] as? Int) == location.satellitesUsed)
            #expect((object["fix"] as? String) == location.fixMode.map { $0 == .twoDimensional ? "2d" : "3d" })
            let extensions = object["ext"] as! [String: String]
            #expect(extensions["speed"].flatMap(Double.init) == location.speed)
            #expect(extensions["simulated"] == (location.isSimulated ? "true" : nil))
        }
    }
}

// MARK: - Helpers

enum ExternalTool {
    static let gpsbabel = find("gpsbabel")
    static let python = find("python3")
    static let hasGPXPy: Bool = {
        guard let python, let run = try? run(python, ["-c", "import gpxpy"]) else { return false }
        return run.status == 0
    }()

    static func find(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static func run(_ program: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}

/// Validates a document with libxml2's XML Schema support; returns the error messages.
func validate(_ document: [UInt8], againstSchema schemaText: String) -> [String] {
    final class Errors { var messages: [String] = [] }
    let errors = Errors()
    let parserContext = schemaText.withCString { xmlSchemaNewMemParserCtxt($0, Int32(strlen($0))) }
    defer { xmlSchemaFreeParserCtxt(parserContext) }
    guard let schema = xmlSchemaParse(parserContext) else { return ["the schema does not parse"] }
    defer { xmlSchemaFree(schema) }
    let validContext = xmlSchemaNewValidCtxt(schema)
    defer { xmlSchemaFreeValidCtxt(validContext) }
    xmlSchemaSetValidStructuredErrors(
        validContext,
        { user, error in
            guard let user, let error, let message = error.pointee.message else { return }
            Unmanaged<Errors>.fromOpaque(user).takeUnretainedValue().messages.append(String(cString: message))
        }, Unmanaged.passUnretained(errors).toOpaque())
    let doc = document.withUnsafeBufferPointer { bytes in
        bytes.withMemoryRebound(to: CChar.self) {
            xmlReadMemory($0.baseAddress, Int32($0.count), "out.gpx", nil, Int32(XML_PARSE_NONET.rawValue))
        }
    }
    guard let doc else { return ["the document does not parse"] }
    defer { xmlFreeDoc(doc) }
    let result = xmlSchemaValidateDoc(validContext, doc)
    if result != 0 && errors.messages.isEmpty { errors.messages.append("invalid (code \(result))") }
    return errors.messages
}

/// The parts of the GPX 1.1 schema (http://www.topografix.com/GPX/1/1/gpx.xsd) that the writer's output
/// touches, transcribed with the same element order, types and ranges; elements the writer never
/// emits (links, persons, bounds, routes, waypoints) are left out, which only makes the check stricter.
let gpx11Schema = """
    <?xml version="1.0" encoding="UTF-8"?>
    <xsd:schema xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns="http://www.topografix.com/GPX/1/1"
        targetNamespace="http://www.topografix.com/GPX/1/1" elementFormDefault="qualified">
      <xsd:element name="gpx" type="gpxType"/>
      <xsd:complexType name="gpxType">
        <xsd:sequence>
          <xsd:element name="metadata" type="metadataType" minOccurs="0"/>
          <xsd:element name="trk" type="trkType" minOccurs="0" maxOccurs="unbounded"/>
          <xsd:element name="extensions" type="extensionsType" minOccurs="0"/>
        </xsd:sequence>
        <xsd:attribute name="version" type="xsd:string" use="required" fixed="1.1"/>
        <xsd:attribute name="creator" type="xsd:string" use="required"/>
      </xsd:complexType>
      <xsd:complexType name="metadataType">
        <xsd:sequence>
          <xsd:element name="name" type="xsd:string" minOccurs="0"/>
          <xsd:element name="desc" type="xsd:string" minOccurs="0"/>
          <xsd:element name="time" type="xsd:dateTime" minOccurs="0"/>
          <xsd:element name="keywords" type="xsd:string" minOccurs="0"/>
          <xsd:element name="extensions" type="extensionsType" minOccurs="0"/>
        </xsd:sequence>
      </xsd:complexType>
      <xsd:complexType name="trkType">
        <xsd:sequence>
          <xsd:element name="name" type="xsd:string" minOccurs="0"/>
          <xsd:element name="cmt" type="xsd:string" minOccurs="0"/>
          <xsd:element name="desc" type="xsd:string" minOccurs="0"/>
          <xsd:element name="src" type="xsd:string" minOccurs="0"/>
          <xsd:element name="number" type="xsd:nonNegativeInteger" minOccurs="0"/>
          <xsd:element name="type" type="xsd:string" minOccurs="0"/>
          <xsd:element name="extensions" type="extensionsType" minOccurs="0"/>
          <xsd:element name="trkseg" type="trksegType" minOccurs="0" maxOccurs="unbounded"/>
        </xsd:sequence>
      </xsd:complexType>
      <xsd:complexType name="trksegType">
        <xsd:sequence>
          <xsd:element name="trkpt" type="wptType" minOccurs="0" maxOccurs="unbounded"/>
          <xsd:element name="extensions" type="extensionsType" minOccurs="0"/>
        </xsd:sequence>
      </xsd:complexType>
      <xsd:complexType name="wptType">
        <xsd:sequence>
          <xsd:element name="ele" type="xsd:decimal" minOccurs="0"/>
          <xsd:element name="time" type="xsd:dateTime" minOccurs="0"/>
          <xsd:element name="magvar" type="degreesType" minOccurs="0"/>
          <xsd:element name="geoidheight" type="xsd:decimal" minOccurs="0"/>
          <xsd:element name="name" type="xsd:string" minOccurs="0"/>
          <xsd:element name="cmt" type="xsd:string" minOccurs="0"/>
          <xsd:element name="desc" type="xsd:string" minOccurs="0"/>
          <xsd:element name="src" type="xsd:string" minOccurs="0"/>
          <xsd:element name="sym" type="xsd:string" minOccurs="0"/>
          <xsd:element name="type" type="xsd:string" minOccurs="0"/>
          <xsd:element name="fix" type="fixType" minOccurs="0"/>
          <xsd:element name="sat" type="xsd:nonNegativeInteger" minOccurs="0"/>
          <xsd:element name="hdop" type="xsd:decimal" minOccurs="0"/>
          <xsd:element name="vdop" type="xsd:decimal" minOccurs="0"/>
          <xsd:element name="pdop" type="xsd:decimal" minOccurs="0"/>
          <xsd:element name="ageofdgpsdata" type="xsd:decimal" minOccurs="0"/>
          <xsd:element name="dgpsid" type="dgpsStationType" minOccurs="0"/>
          <xsd:element name="extensions" type="extensionsType" minOccurs="0"/>
        </xsd:sequence>
        <xsd:attribute name="lat" type="latitudeType" use="required"/>
        <xsd:attribute name="lon" type="longitudeType" use="required"/>
      </xsd:complexType>
      <xsd:complexType name="extensionsType">
        <xsd:sequence>
          <xsd:any namespace="##other" processContents="lax" minOccurs="0" maxOccurs="unbounded"/>
        </xsd:sequence>
      </xsd:complexType>
      <xsd:simpleType name="latitudeType">
        <xsd:restriction base="xsd:decimal">
          <xsd:minInclusive value="-90.0"/>
          <xsd:maxInclusive value="90.0"/>
        </xsd:restriction>
      </xsd:simpleType>
      <xsd:simpleType name="longitudeType">
        <xsd:restriction base="xsd:decimal">
          <xsd:minInclusive value="-180.0"/>
          <xsd:maxExclusive value="180.0"/>
        </xsd:restriction>
      </xsd:simpleType>
      <xsd:simpleType name="degreesType">
        <xsd:restriction base="xsd:decimal">
          <xsd:minInclusive value="0.0"/>
          <xsd:maxExclusive value="360.0"/>
        </xsd:restriction>
      </xsd:simpleType>
      <xsd:simpleType name="fixType">
        <xsd:restriction base="xsd:string">
          <xsd:enumeration value="none"/>
          <xsd:enumeration value="2d"/>
          <xsd:enumeration value="3d"/>
          <xsd:enumeration value="dgps"/>
          <xsd:enumeration value="pps"/>
        </xsd:restriction>
      </xsd:simpleType>
      <xsd:simpleType name="dgpsStationType">
        <xsd:restriction base="xsd:integer">
          <xsd:minInclusive value="0"/>
          <xsd:maxInclusive value="1023"/>
        </xsd:restriction>
      </xsd:simpleType>
    </xsd:schema>
    """
