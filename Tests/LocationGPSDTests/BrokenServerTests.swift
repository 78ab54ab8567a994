import Foundation
import GPSDTestSupport
import LocationCore
import LocationTesting
import Synchronization
import Testing
@testable import LocationGPSD

/// A peer that imitates gpsd badly must give clear errors, never a crash, a hang, unbounded memory or a
/// wrong fix, and the valid fixes it sends among the junk must still be delivered.
@Suite("gpsd source against broken servers", .serialized)
struct BrokenServerTests {
    static func configuration(port: Int, watchdog: Duration = .seconds(1)) -> GPSDConfiguration {
        GPSDConfiguration(
            host: "127.0.0.1", port: port, reconnectDelay: .milliseconds(50),
            maximumReconnectDelay: .milliseconds(200), watchdogTimeout: watchdog, epochSettle: .milliseconds(100))
    }

    /// A TPV line built by hand, for values ``GPSDLines/tpv(_:extra:)`` would not write.
    static func raw(_ milliseconds: Int, mode: String = "3", lat: String, lon: String = "-0.1", extra: String = "") -> String {
        #"{"class":"TPV","device":"/dev/ttyFAKE","mode":\#(mode),"time":"\#(GPSDLines.time(milliseconds))","lat":\#(lat),"lon":\#(lon)\#(extra)}"#
    }

    struct Script: Sendable {
        var name: String
        var steps: [FakeGPSDServer.Step]
        var ending: FakeGPSDServer.Ending
        /// The errors expected on the first connection, in order, as code and a phrase of the message;
        /// reconnections must add nothing (one message per outage and per kind of junk).
        var errors: [(LocationError.Code, String)]
    }

    static let scripts: [Script] = [
        Script(
            name: "garbage, then close",
            steps: [.text(GPSDLines.greeting + "this is not JSON at all\n"), .bytes([0x01, 0x02, 0x7F, 0xFF, 0xFE, 0x0A]), .text("{{{{\n")],
            ending: .close,
            errors: [(.invalidData, "not valid JSON (it is not a JSON object): 'this is not JSON at all'; skipped it"),
                     (.sourceFailed, "closed the connection; reconnecting\n")]),
        Script(
            name: "cut TPV line, then close",
            steps: [.text(GPSDLines.version + "\n" + String(GPSDLines.tpv(0).prefix(90)))],
            ending: .close,
            errors: [(.sourceFailed, "closed the connection in the middle of a line; reconnecting\n")]),
        Script(
            name: "cut line, held open",
            steps: [.text(GPSDLines.version + "\n" + #"{"class":"TPV","mode":3,"lat":51."#)],
            ending: .stayOpen,
            errors: [(.sourceFailed, "sent no data from a receiver for 1 s; reconnecting\n")]),
        Script(
            name: "100 KB line, then close",
            steps: [.text(GPSDLines.version + "\n"), .filler(UInt8(ascii: "A"), count: 100_000), .text("\n")],
            ending: .close,
            errors: [(.invalidData, "a line longer than 65536 bytes: 'AAAA"), (.sourceFailed, "closed the connection; reconnecting\n")]),
        Script(
            name: "1 MB line without a newline, held open",
            steps: [.text(GPSDLines.greeting), .filler(UInt8(ascii: "x"), count: 1 << 20)],
            ending: .stayOpen,
            errors: [(.invalidData, "a line longer than 65536 bytes"), (.sourceFailed, "sent only unusable lines (1) for 1 s; reconnecting\n")]),
        Script(
            name: "TPV with nonsense values",
            steps: [.text(GPSDLines.version + "\n" + #"{"class":"TPV","mode":3,"time":"not a time","lat":"north","lon":null}"# + "\n")],
            ending: .close,
            errors: [(.invalidData, #"a TPV with time "not a time" (not an RFC 3339 date and time)"#), (.sourceFailed, "closed the connection; reconnecting\n")]),
        Script(
            name: "not gpsd at all",
            steps: [.text("SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n")],
            ending: .stayOpen,
            errors: [(.sourceUnavailable, "the peer at 127.0.0.1:PORT is not speaking gpsd's JSON protocol; it sent 'SSH-2.0-OpenSSH_9.2p1 Debian-2'\n")]),
        Script(
            name: "silent peer",
            steps: [],
            ending: .stayOpen,
            errors: [(.sourceFailed, "accepted the connection but sent nothing for 1 s (gpsd stalled, or not gpsd); reconnecting\n")]),
        Script(
            name: "gpsd without a receiver",
            steps: [.text([GPSDLines.version, GPSDLines.noDevices, GPSDLines.watch].map { $0 + "\n" }.joined())],
            ending: .stayOpen,
            errors: [(.sourceUnavailable, "has no receiver (its device list is empty)\n")]),
        Script(
            name: "gpsd refusing the watch",
            steps: [.text(GPSDLines.version + "\n" + GPSDLines.noSuchDevice + "\n")],
            ending: .stayOpen,
            errors: [(.sourceUnavailable, "refused to stream: No such device as /dev/ttyNONE\n")]),
    ]

    @Test(.timeLimit(.minutes(1)), arguments: scripts.map(\.name))
    func brokenPeer(_ name: String) async throws {
        let script = Self.scripts.first { $0.name == name }!
        let server = try FakeGPSDServer(steps: script.steps, ending: script.ending)
        defer { server.stop() }
        let source = try GPSDLocationSource(configuration: Self.configuration(port: server.port))
        let recorder = EventRecorder()
        recorder.start(source)
        // Past the first outage and at least two reconnections, which must report nothing new.
        let reconnected = await recorder.wait(timeout: .seconds(20)) { recorder in
            recorder.errors.count >= script.errors.count && server.connections.load(ordering: .relaxed) >= 3
        }
        await recorder.stop()
        #expect(reconnected, "\(name): the errors are reported and the source keeps reconnecting")
        #expect(recorder.locations.isEmpty, "\(name): nothing is delivered from a broken peer")
        let errors = recorder.errors
        print("\(name): \(errors.map(\.description))")
        #expect(errors.count == script.errors.count, "\(name): got \(errors)")
        for (error, expected) in zip(errors, script.errors) {
            // A phrase ending in a line break must end the message.
            let phrase = expected.1.replacingOccurrences(of: "PORT", with: String(server.port))
            #expect(error.code == expected.0, "\(name): \(error)")
            #expect((error.message + "\n").contains(phrase), "\(name): \(error.message) should say \(phrase)")
            #expect(error.message.contains("127.0.0.1:\(server.port)"), "\(name): the error names the peer: \(error)")
            #expect(!error.message.contains("\n"), "\(name): one line")
        }
        #expect(recorder.statuses.first == .connecting)
        #expect(recorder.statuses.contains(.unavailable))
    }

    /// Junk of every kind between valid fixes on one connection: each valid fix is delivered, in order,
    /// each unusable line is skipped and counted, and each kind of problem is reported exactly once.
    @Test(.timeLimit(.minutes(1)))
    func validFixesAmongJunkAreDelivered() async throws {
        let tpv = { (milliseconds: Int) in GPSDLines.tpv(milliseconds) + "\n" }
        let line = { (text: String) in text + "\n" }
        let deep = #"{"class":"TPV","x":"# + String(repeating: "[", count: 100) + String(repeating: "]", count: 100) + "}"
        let steps: [FakeGPSDServer.Step] = [
            .text(GPSDLines.greeting + line(GPSDLines.sky())),
            .text(tpv(0)),
            .text(line("this is not JSON at all")),                                          // skipped 1
            .bytes([0x01, 0x02, 0x7F, 0xFF, 0xFE, 0x0A]),                                     // 2
            .text(line("{{{{")),                                                               // 3
            .text(tpv(100)),
            .text(line(String(GPSDLines.tpv(150).prefix(120)))),                              // 4: cut off
            .text(line(#"{"class":"FOO","mode":3,"lat":1.0,"lon":2.0,"time":"2024-05-01T06:00:00.160Z"}"#)),  // a class this code does not know: ignored
            .text(line(Self.raw(170, lat: "NaN"))),                                           // 5
            .text(line(Self.raw(180, lat: "51.5", lon: "Infinity"))),                         // 6
            .text(line(Self.raw(190, lat: "-inf"))),                                          // 7
            .text(tpv(200)),
            .text(line(Self.raw(300, lat: "91"))),                                            // 8
            .text(line(Self.raw(310, lat: "51.5", lon: "1e308"))),                            // 9
            .text(line(Self.raw(320, lat: "51.5", lon: "-1e400"))),                           // 10
            .text(line(#"{"class":"TPV","device":"/dev/ttyFAKE","mode":3,"time":"\#(GPSDLines.time(330))","speed":1.0}"#)),  // mode 3, no position: a partial TPV, no fix from it
            .text(line(Self.raw(340, mode: "99", lat: "51.5"))),                              // 12
            .text(line(#"{"class":"TPV","mode":3,"time":"2024-13-45T99:00:00.000Z","lat":51.5,"lon":-0.1}"#)),  // 13
            .text(line(#"{"class":"TPV","mode":3,"time":"9999-05-01T06:00:00.000Z","lat":51.5,"lon":-0.1}"#)),  // 14
            .text(line(Self.raw(500, lat: String(format: "%.9f", GPSDLines.latitude(500)),
                                extra: #","eph":-5.0,"speed":1e308,"track":400.0,"epv":9.0"#))),  // delivered without eph, speed, track
            .text(line(#"{"mode":3,"lat":51.5,"lon":-0.1}"#)),                                // 15
            .text(line("[1,2,3]")),                                                            // 16
            .text(line(GPSDLines.tpv(550) + GPSDLines.tpv(560))),                              // 17
            .text(tpv(600)),
            .text(line(GPSDLines.sky(hdop: "-1.0"))),                                          // hdop left out, line used
            .filler(UInt8(ascii: "x"), count: 1 << 20), .text("\n"),                           // 18: 1 MB line
            .text(tpv(700)),
            .text(line(deep)),                                                                 // 19
            .text(tpv(800)),
        ]
        let server = try FakeGPSDServer(steps: steps, ending: .stayOpen)
        defer { server.stop() }
        // A long watchdog: the peer falls silent after its script, and that is not under test here.
        let source = try GPSDLocationSource(configuration: Self.configuration(port: server.port, watchdog: .seconds(60)))
        let recorder = EventRecorder()
        recorder.start(source)
        let delivered = await recorder.wait(timeout: .seconds(20)) { $0.locations.count >= 7 }
        // Anything delivered late or twice would show up in this time.
        try await Task.sleep(for: .milliseconds(500))
        await recorder.stop()
        #expect(delivered)

        let locations = recorder.locations
        #expect(locations.map(GPSDLines.milliseconds) == [0, 100, 200, 500, 600, 700, 800])
        for location in locations {
            #expect(abs(location.latitude - GPSDLines.latitude(GPSDLines.milliseconds(location))) < 1e-9)
            #expect(location.longitude == -0.1)
            #expect(location.hasValidCoordinate)
        }
        #expect(locations.first?.satellitesUsed == 9)
        #expect(locations.first?.horizontalAccuracy == 5, "root sum of squares of epx 3 and epy 4")
        if let leftOut = locations.first(where: { GPSDLines.milliseconds($0) == 500 }) {
            #expect(leftOut.horizontalAccuracy == nil, "eph -5 is left out, not used")
            #expect(leftOut.speed == nil, "speed 1e308 is left out")
            #expect(leftOut.course == nil, "track 400 is left out")
            #expect(leftOut.verticalAccuracy == 9, "the other values of the line are kept")
        }
        #expect(source.linesSkipped == 18)

        let errors = recorder.errors
        print(errors.map(\.description).joined(separator: "\n"))
        let expected: [String] = [
            "sent a line that is not valid JSON (it is not a JSON object): 'this is not JSON at all'; skipped it",
            "sent a TPV with latitude 91 (outside -90…90); no fix taken from it",
            "sent a TPV with eph -5 (outside 0…40000000 m); left that value out",
            #"sent a JSON object without a "class": '{"mode":3,"lat":51.5,"lon":-0.1}'; skipped it"#,
            "sent a line longer than 65536 bytes: 'xxxxxxxx",
        ]
        #expect(errors.count == expected.count, "one error per kind of junk, got \(errors)")
        for (error, phrase) in zip(errors, expected) {
            #expect(error.code == .invalidData)
            #expect(error.message.hasPrefix("gpsd at 127.0.0.1:\(server.port) "), "\(error)")
            #expect(error.message.contains(phrase), "\(error.message) should say \(phrase)")
        }
        #expect(server.connections.load(ordering: .relaxed) == 1, "junk does not cost the connection")
        #expect(!recorder.statuses.contains(.unavailable))
    }

    /// TPVs that are valid JSON but that libgps cannot read, or whose mode it would misread, are reported
    /// once per kind with the line or the value, never dropped without a word.
    @Test(.timeLimit(.minutes(1)))
    func tpvsLibgpsCannotReadAreReportedNotDropped() async throws {
        let line = { (text: String) in text + "\n" }
        let spaced = #"{"class": "TPV", "device": "/dev/ttyFAKE", "mode": 3, "time": "\#(GPSDLines.time(100))", "lat": 51.5, "lon": -0.1}"#
        let steps: [FakeGPSDServer.Step] = [
            .text(GPSDLines.greeting + line(GPSDLines.sky())),
            .text(line(GPSDLines.tpv(0))),
            .text(line(spaced)),                                           // libgps's parser cannot read it
            .text(line(Self.raw(200, lat: #""52.5""#))),                    // a string where a number belongs
            .text(line(Self.raw(300, mode: "1e300", lat: "51.5"))),        // libgps would read mode 1
            .text(line(Self.raw(350, mode: #""2""#, lat: "51.5"))),        // a string mode, same kind
            .text(line(GPSDLines.tpv(400))),
            .text(line(GPSDLines.tpv(500))),
        ]
        let server = try FakeGPSDServer(steps: steps, ending: .stayOpen)
        defer { server.stop() }
        let source = try GPSDLocationSource(configuration: Self.configuration(port: server.port, watchdog: .seconds(60)))
        let recorder = EventRecorder()
        recorder.start(source)
        let delivered = await recorder.wait(timeout: .seconds(20)) { $0.locations.count >= 3 }
        await recorder.stop()
        #expect(delivered)
        #expect(recorder.locations.map(GPSDLines.milliseconds) == [0, 400, 500])
        let messages = recorder.errors.map(\.message)
        #expect(messages.count == 2, "one line per kind: \(messages)")
        #expect(source.linesSkipped == 4)
        #expect(messages.contains { $0.contains("sent a TPV that libgps could not read: '{\"class\": \"TPV\"") }, "\(messages)")
        #expect(messages.contains { $0.contains("sent a TPV with lat:52.5 (a coordinate must be a number); no fix taken from it") }, "\(messages)")
        #expect(!recorder.errors.contains { $0.code == .fixLost }, "mode 1e300 is not read as 'lost its fix'")
    }

    /// Each way a line can fail the JSON check gets a reason a person can act on.
    @Test(arguments: [
        (#"{"class":"TPV","lat":NaN}"#, "unexpected 'N' at byte 22"),
        (#"{"class":"TPV","lat":51.5"#, "it ends before the JSON is complete (cut off after 25 bytes)"),
        (#"{"class":"TPV"}{"class":"SKY"}"#, "text follows the object at byte 16"),
        (#"{"class":"TPV","device":"a\u0001"}"#, ""),
        ("{\"class\":\"TPV\",\"device\":\"a\u{1}\"}", "control character 0x01 inside a string at byte 27"),
        (#"{"class":"TPV","n":01}"#, "unexpected '1' at byte 21, expected ',' or '}'"),
        (#"{"class":"TPV","n":1.}"#, "unexpected '}' at byte 22, expected a digit"),
        (#"{"class":"TPV","s":"\q"}"#, #"bad escape '\q' at byte 22"#),
        ("[" + String(repeating: "[", count: 40), "it is not a JSON object"),
        (#"{"a":"# + String(repeating: "[", count: 40) + String(repeating: "]", count: 40) + "}", "it nests deeper than 32 levels"),
        ("", "the line is empty"),
    ])
    func jsonCheckNamesTheFault(_ line: String, _ reason: String) {
        var text = line
        let result = text.withUTF8 { JSONLineValidator.validate($0) }
        switch result {
        case .success(let members):
            #expect(reason.isEmpty, "\(line) passed, \(members)")
        case .failure(let failure):
            #expect(failure.reason == reason, "\(line)")
        }
    }

    /// A line of 64 MB without a newline in the middle of a stream: memory stays flat, the line is
    /// reported once, and the stream goes on after it.
    @Test(.timeLimit(.minutes(1)))
    func hugeLineKeepsMemoryBounded() async throws {
        let lineBytes = 64 << 20
        let steps: [FakeGPSDServer.Step] = [
            .text(GPSDLines.greeting + GPSDLines.tpv(0) + "\n"),
            .filler(UInt8(ascii: "{"), count: lineBytes),
            .text("\n" + GPSDLines.tpv(100) + "\n" + GPSDLines.tpv(200) + "\n"),
        ]
        let server = try FakeGPSDServer(steps: steps, ending: .stayOpen)
        defer { server.stop() }
        let source = try GPSDLocationSource(configuration: Self.configuration(port: server.port, watchdog: .seconds(30)))
        let recorder = EventRecorder()
        let before = ProcessMemory.residentBytes()
        let (delivered, peak) = await ProcessMemory.peak {
            recorder.start(source)
            return await recorder.wait(timeout: .seconds(40)) { $0.locations.count >= 3 }
        }
        await recorder.stop()
        #expect(delivered)
        let growth = peak - before
        print("64 MB line: resident memory \(before >> 20) MiB before, peak \(peak >> 20) MiB (+\(growth >> 10) KiB)")
        if Sanitizer.memoryFiguresAreMeaningful {
            #expect(growth < Self.memoryBound, "resident memory grew by \(growth >> 10) KiB for a \(lineBytes >> 20) MB line")
        }
        #expect(recorder.locations.map(GPSDLines.milliseconds) == [0, 100, 200])
        #expect(recorder.errors.map(\.code) == [.invalidData])
        #expect(recorder.errors.first?.message.contains("longer than 65536 bytes") == true)
        #expect(server.connections.load(ordering: .relaxed) == 1)
    }

    /// The most this process's resident memory may grow while the source reads a huge line or a flood:
    /// a reader that kept the line, or anything per line, would exceed it many times over.
    static let memoryBound = 4 << 20

    /// 10,000 lines a second, five in ten of them unusable and one a partial TPV without a position: every valid epoch is delivered exactly once and
    /// in order, the junk is counted, two messages in all (one per kind), and memory stays flat.
    @Test(.timeLimit(.minutes(2)))
    func floodOfTenThousandLinesPerSecond() async throws {
        let seconds = 6
        let linesPerSecond = 10_000
        let epochs = seconds * linesPerSecond / 10
        // One epoch per millisecond of fix time, ten lines each.
        let cycle: @Sendable (Int) -> String = { index in
            let epoch = index / 10
            switch index % 10 {
            case 0: return GPSDLines.tpv(epoch)
            case 1: return GPSDLines.sky()
            case 2: return #"{"class":"FLOOD","n":\#(index)}"#
            case 3: return "garbage \(index) #$%"
            case 4: return String(GPSDLines.tpv(epoch).prefix(100))
            case 5: return BrokenServerTests.raw(epoch, lat: "NaN")
            case 6: return BrokenServerTests.raw(epoch, lat: "91")
            case 7: return BrokenServerTests.raw(
                epoch, lat: String(format: "%.9f", GPSDLines.latitude(epoch)), lon: "-0.100000000",
                extra: #","speed":2.5,"track":90.0"#)
            case 8: return #"{"class":"TPV","device":"/dev/ttyFAKE","mode":3,"time":"\#(GPSDLines.time(epoch))"}"#  // partial: no fix, not refused
            default: return #"{"class":"TPV","mode":3,"time":"2024-02-30T06:00:00.000Z","lat":51.5,"lon":-0.1}"#
            }
        }
        let server = try FakeGPSDServer(
            steps: [.text(GPSDLines.greeting), .flood(count: epochs * 10, perSecond: linesPerSecond, line: cycle)],
            ending: .stayOpen)
        defer { server.stop() }

        // Counts and checks each location as it comes, keeping none: the memory measured is the source's.
        struct Tally: Sendable {
            var delivered = 0
            var wrong: [String] = []
            var errors: [LocationError] = []
            var unavailable = false
        }
        let tally = Locked(Tally())
        let context = LocationSourceContext(clock: ContinuousClock(), mode: .continuous) { event in
            tally.withLock { tally in
                switch event {
                case .location(let location):
                    let expected = tally.delivered
                    let problems = [
                        GPSDLines.milliseconds(location) == expected ? nil : "time \(GPSDLines.milliseconds(location)) ms",
                        abs(location.latitude - GPSDLines.latitude(expected)) < 1e-9 ? nil : "latitude \(location.latitude)",
                        location.speed == 2.5 && location.course == 90 ? nil : "speed/course \(String(describing: location.speed))",
                        location.satellitesUsed == 9 ? nil : "satellites \(String(describing: location.satellitesUsed))",
                    ].compactMap { $0 }
                    if !problems.isEmpty, tally.wrong.count < 10 {
                        tally.wrong.append("fix #\(expected): " + problems.joined(separator: ", "))
                    }
                    tally.delivered += 1
                case .error(let error):
                    tally.errors.append(error)
                case .status(let status):
                    if status == .unavailable { tally.unavailable = true }
                case .satellitesInView, .held:
                    break
                }
            }
        }
        let source = try GPSDLocationSource(configuration: Self.configuration(port: server.port, watchdog: .seconds(30)))
        let run = Task { try await source.run(context) }
        defer { run.cancel() }

        // Measured from the point where the first tenth has passed, so start-up allocations are not counted.
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(90)
        while tally.withLock({ $0.delivered }) < epochs / 10, clock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        let baseline = ProcessMemory.residentBytes()
        let (_, peak) = await ProcessMemory.peak {
            while tally.withLock({ $0.delivered }) < epochs, clock.now < deadline {
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        // A late duplicate would show up in this time.
        try await Task.sleep(for: .milliseconds(300))
        run.cancel()
        _ = try? await run.value

        let result = tally.withLock { $0 }
        let took = Double(server.floodNanoseconds.load(ordering: .sequentiallyConsistent)) / 1e9
        print("""
            flood: \(epochs * 10) lines in \(took) s (\(Int(Double(epochs * 10) / max(took, 0.001))) lines/s); \
            \(result.delivered) fixes, \(source.linesSkipped) lines skipped; resident memory \(baseline >> 20) MiB, \
            peak +\((peak - baseline) >> 10) KiB
            """)
        #expect(result.delivered == epochs, "every valid epoch exactly once")
        #expect(result.wrong.isEmpty, "\(result.wrong)")
        #expect(source.linesSkipped == epochs * 5)
        #expect(result.errors.map(\.code) == [.invalidData, .invalidData], "\(result.errors)")
        #expect(result.errors.first?.message.contains("not valid JSON") == true)
        #expect(result.errors.last?.message.contains("sent a TPV with latitude 91") == true)
        #expect(!result.unavailable, "the flood does not cost the connection")
        // How fast the reader keeps up is speed, which a sanitizer slows several times over: printed above,
        // asserted in normal builds only.
        if Sanitizer.speedUnderLoadIsMeaningful {
            #expect(took < Double(seconds) * 3, "the reader kept up with the flood")
        }
        if Sanitizer.memoryFiguresAreMeaningful {
            #expect(peak - baseline < Self.memoryBound, "resident memory grew by \((peak - baseline) >> 10) KiB during the flood")
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func retriesWithBackoffNotInABusyLoop() async throws {
        let server = try FakeGPSDServer(script: Array("not gpsd\n".utf8), ending: .close)
        defer { server.stop() }
        let source = try GPSDLocationSource(configuration: Self.configuration(port: server.port))
        let recorder = EventRecorder()
        recorder.start(source)
        await recorder.wait(timeout: .seconds(2)) { _ in false }
        await recorder.stop()
        // 50, 100, 200, 200, ... ms between attempts: about a dozen in 2 s; a busy loop makes thousands.
        let times = server.connectionTimes.value
        let gaps = zip(times, times.dropFirst()).map { $0.duration(to: $1) }
        try #require(gaps.count >= 5, "\(times.count) connection attempts in 2 s")
        // Never sooner than the backoff: it doubles from 50 ms (a busy loop or a fixed delay fails here)...
        let backoff: [Duration] = [.milliseconds(50), .milliseconds(100), .milliseconds(200)]
        for (index, gap) in gaps.enumerated() {
            let delay = backoff[min(index, backoff.count - 1)]
            #expect(gap >= delay - .milliseconds(5), "attempt \(index + 2) came \(gap) after the one before, under the \(delay) backoff")
        }
        // ... up to its 200 ms cap: without one the fourth gap would be 400 ms and the fifth 800 ms. The
        // median stays clear of a late wake-up; a sanitizer's slowness is printed, not asserted.
        let capped = gaps.dropFirst(3).sorted()
        let median = capped[capped.count / 2]
        print("backoff: \(times.count) attempts in 2 s; gaps \(gaps.map { Int($0 / .milliseconds(1)) }) ms")
        if Sanitizer.speedUnderLoadIsMeaningful {
            #expect(median < .milliseconds(300), "capped at 200 ms: median gap \(median) after the third")
            #expect((9...13).contains(times.count), "\(times.count) connection attempts in 2 s, about 12 expected")
        }
        #expect(recorder.errors.count == 1)
    }

    /// Nobody listens on the port (it is bound, so connections are refused and nobody else can take it):
    /// the source keeps trying at its capped backoff with one error for the whole outage, and connects as
    /// soon as something listens.
    @Test(.timeLimit(.minutes(1)))
    func nobodyListening() async throws {
        let (socket, port) = try LoopbackTCP.reservedPort()
        defer { close(socket) }
        let source = try GPSDLocationSource(configuration: Self.configuration(port: port))
        let recorder = EventRecorder()
        recorder.start(source)
        defer { Task { await recorder.stop() } }
        // Attempts at 0, 50, 150, 350, 550, 750, 950 ms: seven refused in the first second.
        await recorder.wait(timeout: .seconds(1)) { _ in false }
        let errors = recorder.errors
        #expect(errors.count == 1)
        #expect(errors.first?.code == .sourceUnavailable)
        #expect(errors.first?.message.contains("cannot connect to gpsd at 127.0.0.1:\(port)") == true, "\(errors)")
        #expect(recorder.statuses.first == .connecting)
        #expect(recorder.statuses.contains(.unavailable))

        // Something listens now: the next attempt, at most the 200 ms cap away, connects. A source that
        // gave up after its first refusal never comes; one without the cap would wait until 1.55 s.
        #expect(Glibc.listen(socket, 4) == 0)
        let listening = ContinuousClock.now
        var ready = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        let arrived = poll(&ready, 1, 5_000) == 1
        let after = listening.duration(to: .now)
        #expect(arrived, "the source tried again after being refused")
        if arrived { close(accept(socket, nil, nil)) }
        print("nobody listening: connected \(after) after the port began listening")
        if Sanitizer.speedUnderLoadIsMeaningful {
            #expect(after < .milliseconds(400), "attempts went on at the capped backoff: \(after)")
        }
        await recorder.stop()
        #expect(recorder.errors.count == 1, "one error for the outage: \(recorder.errors)")
    }
}
