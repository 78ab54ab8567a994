import Foundation
import GPSDTestSupport
import LocationCore
import Testing

@Suite("NMEA output read back by gpsd", .serialized)
struct NMEARoundTripTests {
    @Test(
        "replay --format nmea fed to a real gpsd (gpsfake) comes back as the same fixes",
        .enabled(if: GPSFakeProcess.isInstalled, "needs gpsfake (apt-get install gpsd python3-gps)"))
    func gpsdReadsOurSentences() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 240)
        let original = try Tool.run("locationctl", ["replay", track, "--fast", "--format", "json"], in: directory)
        try #require(original.status == 0, "\(original.stderr)")
        var expected: [String: [String: Any]] = [:]
        for object in try jsonObjects(original.lines) where object["type"] as? String == "location" {
            expected[try #require(object["timestamp"] as? String)] = object
        }
        try #require(expected.count == 240)

        let nmea = try Tool.run("locationctl", ["replay", track, "--fast", "--format", "nmea"], in: directory)
        try #require(nmea.status == 0, "\(nmea.stderr)")
        let capture = directory.file("walk.nmea")
        try nmea.stdout.write(toFile: capture, atomically: false, encoding: .utf8)
        #expect(nmea.stdout.components(separatedBy: "\r\n").filter { $0.hasPrefix("$GPGGA,") }.count == 240)

        let gpsd = try FakeGPSD(capture: capture, directory: directory)
        let back = try Tool.run(
            "locationctl", ["watch", "--gpsd", "127.0.0.1:\(gpsd.port)", "--count", "60", "--format", "json"],
            timeout: 120, in: directory)
        #expect(back.status == 0, "\(back.stderr)")
        let received = try jsonObjects(back.lines).filter { $0["type"] as? String == "location" }
        #expect(received.count == 60)
        var compared = 0
        for fix in received {
            let time = try #require(fix["timestamp"] as? String)
            guard let sent = expected[time] else {
                Issue.record("gpsd reported a fix at \(time) that the replay never wrote: \(fix)")
                continue
            }
            compared += 1
            // gpsd's very first report may come before it has seen the whole epoch (a 2D fix from GGA alone,
            // without altitude or the RMC's speed): its coordinate is compared, the rest from the second on.
            let isFirst = compared == 1
            var keys = [("latitude", 1e-7), ("longitude", 1e-7)]
            if !isFirst { keys += [("speed", 0.006), ("course", 0.0501), ("altitude", 0.0501)] }
            for (key, tolerance) in keys {
                let a = try #require(sent[key] as? Double, "\(key) in \(sent)")
                let b = try #require(fix[key] as? Double, "\(key) in what gpsd reported: \(fix)")
                #expect(abs(a - b) <= tolerance, "\(key) at \(time): wrote \(a), gpsd read \(b)")
            }
            if !isFirst { #expect(fix["fixMode"] as? String == "3D", "\(fix)") }
        }
        #expect(compared == 60)
    }
}

@Suite("--format nmea of watch and current", .serialized)
struct NMEAFormatCommandTests {
    @Test("watch and current --format nmea write sentences only on standard output, the rest on standard error")
    func watchAndCurrent() throws {
        let daemon = try RunningDaemon()
        let watch = try daemon.ctl(["watch", "--format", "nmea", "--count", "3"])
        #expect(watch.status == 0, "\(watch.stderr)")
        let lines = watch.stdout.components(separatedBy: "\r\n")
        #expect(lines.last == "" && lines.dropLast().count == 9, "\(watch.stdout)")
        #expect(lines.dropLast().allSatisfy(NMEAReader.isValid))
        #expect(watch.stderr.contains("── state:"), "the state lines go to standard error: \(watch.stderr)")
        let current = try daemon.ctl(["current", "--format", "nmea"])
        #expect(current.status == 0, "\(current.stderr)")
        let sentences = current.stdout.components(separatedBy: "\r\n").dropLast()
        #expect(sentences.map { String($0.prefix(6)) } == ["$GPGGA", "$GPGSA", "$GPRMC"] && sentences.allSatisfy(NMEAReader.isValid), "\(current.stdout)")
    }
}
