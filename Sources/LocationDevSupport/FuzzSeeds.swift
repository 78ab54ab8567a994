import Foundation

/// Small valid GPX documents and the fragments worth splicing into them: the seed corpus and dictionary of
/// the libFuzzer target, and the raw material of the deterministic mutation test in `LocationGPXTests`.
public enum FuzzSeeds {
    /// Small documents that read without error, covering what the reader maps: GPX 1.1 and 1.0, no
    /// namespace, a prefixed namespace, routes and waypoints, every field, Garmin TrackPointExtension,
    /// the `loc` extension, internal entities, CDATA, ISO-8859-1 and odd time forms.
    public static let documents: [String] = [
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <gpx version="1.1" creator="test" xmlns="http://www.topografix.com/GPX/1/1">
        <trk><trkseg><trkpt lat="47" lon="8"><ele>400</ele><time>2024-05-01T06:00:00Z</time></trkpt>\
        <trkpt lat="47.001" lon="8.001"><time>2024-05-01T06:00:01.5Z</time></trkpt>\
        <trkpt lat="47.002" lon="8"><time>2024-05-01T06:00:01.5Z</time></trkpt></trkseg><trkseg></trkseg></trk>
        <rte><rtept lat="1" lon="2"><name>a &amp; b</name></rtept></rte>
        </gpx>
        """,
        #"<gpx version="1.0" xmlns="http://www.topografix.com/GPX/1/0"><wpt lat="1.5" lon="-2.25"><ele>3</ele><time>2003-06-29T00:00:00</time><speed>3</speed><course>271.25</course><fix>3d</fix><sat>7</sat></wpt></gpx>"#,
        """
        <?xml version="1.0" encoding="ISO-8859-1"?>
        <!DOCTYPE gpx [ <!ENTITY e "entity"> ]>
        <gpx xmlns:g="http://www.garmin.com/xmlschemas/TrackPointExtension/v1"><trk><trkseg>
        <trkpt lon="8.1" lat="47.1"><time>2024-05-01T06:00:00.123+01:00</time><extensions><g:TrackPointExtension>\
        <g:hr>120</g:hr><g:cad>88</g:cad><g:atemp>21.5</g:atemp></g:TrackPointExtension></extensions><name>&e;<![CDATA[<x>]]></name></trkpt>
        </trkseg></trk></gpx>
        """,
        """
        <gpx version="1.1" creator="swift-location" xmlns="http://www.topografix.com/GPX/1/1" \
        xmlns:loc="https://swift-location.dev/xmlns/gpx-location/1">
          <trk><trkseg>
            <trkpt lat="52.5105" lon="13.3455">
              <ele>34.5</ele><time>2026-01-01T09:00:00.25Z</time><src>/dev/ttyACM0</src><fix>3d</fix><sat>9</sat>
              <hdop>0.9</hdop><vdop>1.4</vdop><pdop>1.7</pdop>
              <extensions><loc:speed>1.5</loc:speed><loc:course>45</loc:course>\
        <loc:horizontalAccuracy>3.5</loc:horizontalAccuracy><loc:verticalAccuracy>5</loc:verticalAccuracy>\
        <loc:speedAccuracy>0.25</loc:speedAccuracy><loc:courseAccuracy>7.5</loc:courseAccuracy>\
        <loc:climb>-0.5</loc:climb><loc:ellipsoidalAltitude>57.25</loc:ellipsoidalAltitude>\
        <loc:simulated>true</loc:simulated></extensions>
            </trkpt>
          </trkseg></trk>
        </gpx>
        """,
        #"<g:gpx xmlns:g="http://www.topografix.com/GPX/1/1"><g:wpt lat="-90" lon="180"><g:geoidheight>47.1</g:geoidheight><g:ele>1</g:ele><g:time>2024-05-01 06:00:00-05:00</g:time><g:src>a&#x263A;b</g:src></g:wpt><g:wpt lon="-180" lat="90"/></g:gpx>"#,
        "<gpx>\r\n\t<wpt lat=\"0.123456789012345678901234567890\" lon=\"-0\">\r\n\t\t<time>2021-03-04T12:34:53.7176739Z</time>\r\n\t</wpt>\r\n</gpx>\r\n",
    ]

    /// Fragments worth splicing in: structure, entities, encodings, numbers and times at their limits.
    public static let tokens: [[UInt8]] =
        [
            "<", ">", "</", "/>", "\"", "'", "&", "&amp;", "&#0;", "&#x110000;", "&#xD800;", "&lt;", "&e;", "&undefined;",
            "<![CDATA[", "]]>", "<!--", "-->", "<?xml version=\"1.0\"?>", "<?pi?>",
            "<!DOCTYPE gpx [<!ENTITY e \"&e;\">]>",
            "<!DOCTYPE gpx [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\"><!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\">]>",
            "&c;&c;&c;&c;", "<!DOCTYPE gpx SYSTEM \"file:///etc/passwd\">", "<!ENTITY x SYSTEM \"file:///etc/hostname\">",
            "<trkpt lat=\"1\" lon=\"2\">", "</trkpt>", "<trk><trkseg>", "</trkseg></trk>", "<wpt lat=\"91\" lon=\"0\"/>",
            "<rte>", "<rtept lat=\"-90\" lon=\"180\"/>", "<ele>", "</ele>", "<time>", "</time>", "<sat>", "<fix>pps</fix>",
            "lat=\"", "lon=\"", "NaN", "1e999", "-0", "0x1p3", "123456789012345678901234567890.5", ".", "-",
            "2024-02-30T00:00:00Z", "9999-12-31T23:59:60.999999999999Z", "2024-05-01 06:00:00+14:00", "T", "Z",
            "xmlns=\"http://www.topografix.com/GPX/1/1\"", "xmlns:loc=\"https://swift-location.dev/xmlns/gpx-location/1\"",
            "<loc:simulated>maybe</loc:simulated>", "<loc:speed>1</loc:speed>", "<extensions>", "</extensions>",
            "<src>", "</src>", "<name>", "</name>", "<geoidheight>", "<hdop>",
            "\u{0}", "\u{1}", "\u{FEFF}", "\r\n", "\t", "é", "☺", "\u{10FFFF}",
        ].map { Array($0.utf8) } + [[0xFF, 0xFE], [0xFE, 0xFF], [0xEF, 0xBB, 0xBF], [0xC3], [0xE2, 0x98], [0x80], [0xFF]]

    /// Values to put where a value goes (text between tags, or an attribute's value).
    public static let values: [[UInt8]] = [
        "", " ", "0", "-0", "90", "90.0000001", "-180", "180", "181", "1e2", "1e-400", "1e400", "NaN", "inf", "+5", "--5",
        "0.123456789012345678901234567890", "3d", "2d", "none", "dgps", "x", "true", "false", "-1", "4294967296",
        "99999999999999999999", "2024-05-01T06:00:00Z", "2024-05-01T06:00:00.1234567Z", "2003-06-29T00:00:00",
        "2024-05-01T06:00:00+25:00", "2024-02-29T00:00:00Z", "2023-02-29T00:00:00Z", "0000-01-01T00:00:00Z",
        "&amp;", "&#65;", "a&b", "<", "\u{0}",
    ].map { Array($0.utf8) }

    /// The tokens and values as a libFuzzer dictionary: one quoted entry per line, bytes outside printable
    /// ASCII (and `"` and `\`) as `\xNN`.
    public static var dictionary: String {
        var lines: [String] = []
        var seen = Set<[UInt8]>()
        for entry in tokens + values where !entry.isEmpty && seen.insert(entry).inserted {
            var line = "\""
            for byte in entry {
                if byte >= 0x20, byte < 0x7F, byte != 0x22, byte != 0x5C {
                    line.append(Character(Unicode.Scalar(byte)))
                } else {
                    line += "\\x" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
                }
            }
            lines.append(line + "\"")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Writes the documents to `directory/seed-N.gpx` (creating it) and the dictionary to `dictionaryPath`.
    public static func write(to directory: String, dictionaryPath: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for (index, document) in documents.enumerated() {
            try Data(document.utf8).write(to: URL(fileURLWithPath: "\(directory)/seed-\(index).gpx"))
        }
        try Data(dictionary.utf8).write(to: URL(fileURLWithPath: dictionaryPath))
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
