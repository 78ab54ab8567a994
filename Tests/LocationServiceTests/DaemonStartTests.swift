import Foundation
import Testing

/// What `locationd` does at start with a replay file it cannot use.
@Suite("locationd start-up checks")
struct DaemonStartTests {
    @Test(
        "a replay file that is empty, not XML, pointless or damaged at its first point is exit 65 before listening",
        arguments: [
            ("", "the file is empty"),
            ("garbage\u{0}\u{1}", "not XML"),
            (#"<gpx version="1.1" xmlns="http://www.topografix.com/GPX/1/1"><trk><trkseg></trkseg></trk></gpx>"#,
             "no track point, route point or waypoint to replay"),
            (#"<gpx version="1.1" xmlns="http://www.topografix.com/GPX/1/1"><trk><trkseg><trkpt lat="nan" lon="1"/></trkseg></trk></gpx>"#,
             #"lat="nan" is not a number"#),
        ])
    func unusableReplayFile(content: String, message: String) throws {
        let directory = TemporaryDirectory()
        let path = directory.file("bad.gpx")
        try Data(content.utf8).write(to: URL(fileURLWithPath: path))
        let socket = directory.file("d.sock")
        let result = try Tool.run("locationd", ["--replay", path, "--socket", socket], timeout: 30, in: directory)
        #expect(result.status == 65, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines.first?.contains(message) == true, "\(result.stderr)")
        #expect(lines.first?.contains("bad.gpx") == true, "the line names the file: \(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: socket), "no socket is left behind")
    }
}
