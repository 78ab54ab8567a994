import Foundation
import LocationCore
import Testing
@testable import LocationGPSD

/// gpsd's correction status and satellites in view reach each Location, and while the receiver has no fix
/// the source says how many satellites it sees.
@Suite("gpsd fix quality", .serialized)
struct FixQualityGPSDTests {
    static let t0 = GPSDTime(seconds: 1_714_543_200, nanoseconds: 0)
    static let t1 = GPSDTime(seconds: 1_714_543_201, nanoseconds: 0)

    static func fix(_ time: GPSDTime?, mode: Int = 3, correction: CorrectionStatus? = nil) -> GPSDReport {
        .fix(GPSDFix(mode: mode, time: time, latitude: 51.5, longitude: -0.1, device: "/dev/ttyACM0", correction: correction))
    }

    static func locations(_ events: [LocationSourceEvent]) -> [Location] {
        events.compactMap { if case .location(let location) = $0 { location } else { nil } }
    }

    @Test("gpsd's status numbers map to correction statuses; 0 is not reported, and numbers gpsd does not use are refused")
    func statusNumbers() {
        let expected: [Int: CorrectionStatus?] = [
            0: nil, 1: .gps, 2: .dgps, 3: .rtkFixed, 4: .rtkFloat, 5: .deadReckoning, 6: .gnssDeadReckoning,
            7: .timeOnly, 8: .simulated, 9: .precisePositioning,
        ]
        for (number, status) in expected {
            #expect(GPSDFix.correctionStatus(gpsdStatus: number) == .some(status), "status \(number)")
        }
        for number in [-1, 10, 99, Int(Int32.max), Int(Int32.min), Int.max, Int.min] {
            #expect(GPSDFix.correctionStatus(gpsdStatus: number) == nil, "status \(number)")
        }
        if case .fix(let fix, let leftOut) = GPSDFix.checked(
            mode: 3, time: Self.t0, latitude: 51.5, longitude: -0.1, altitudeMSL: .nan, altitudeHAE: .nan, eph: .nan,
            epx: .nan, epy: .nan, epv: .nan, speed: .nan, eps: .nan, track: .nan, epd: .nan, climb: .nan, device: nil,
            status: 42)
        {
            #expect(fix.correction == nil)
            #expect(leftOut == "status 42 (gpsd uses 0 to 9)")
        } else {
            Issue.record("a TPV with an unknown status is still a fix")
        }
    }

    @Test("an epoch's status and the SKY's satellites in view are put on its Location")
    func mergedOntoTheLocation() {
        var merger = EpochMerger()
        var events = merger.accept(.sky(satellitesUsed: 8, satellitesVisible: 13))
        events += merger.accept(Self.fix(Self.t0, correction: .rtkFloat))
        events += merger.accept(Self.fix(Self.t0))  // a second TPV of the epoch without status keeps it
        events += merger.flush()
        events += merger.accept(Self.fix(Self.t1, correction: .dgps))
        events += merger.flush()
        let delivered = Self.locations(events)
        #expect(delivered.map(\.correctionStatus) == [.rtkFloat, .dgps])
        #expect(delivered.map(\.satellitesVisible) == [13, 13])
        #expect(delivered.map(\.satellitesUsed) == [8, 8])
        #expect(!events.contains { if case .satellitesInView = $0 { true } else { false } }, "nothing to say while there is a fix")
    }

    @Test("without a fix the satellites in view are reported before no-fix and whenever they change, until the fix comes")
    func satellitesWhileWaiting() {
        var merger = EpochMerger()
        var events = merger.accept(.sky(satellitesUsed: 0, satellitesVisible: 3))
        events += merger.accept(Self.fix(nil, mode: 1))
        events += merger.accept(.sky(satellitesUsed: 0, satellitesVisible: 3))
        events += merger.accept(.sky(satellitesUsed: 0, satellitesVisible: 5))
        events += merger.accept(.sky(satellitesUsed: 0, satellitesVisible: nil))
        events += merger.accept(Self.fix(Self.t0))
        events += merger.accept(.sky(satellitesUsed: 4, satellitesVisible: 6))
        events += merger.flush()
        let noLocations = events.filter { if case .location = $0 { false } else { true } }
        #expect(noLocations == [.satellitesInView(3), .status(.noFix), .satellitesInView(5), .status(.hasFix)])
    }

    /// A stand-in gpsd sends statuses gpsd uses and some it does not, SKYs with and without a list of
    /// satellites, and a wait without a fix.
    @Test(.timeLimit(.minutes(1)))
    func throughLibgps() async throws {
        let line = { (text: String) in text + "\n" }
        func sky(listed: Int, used: Int) -> String {
            let satellites = (0..<listed).map { #"{"PRN":\#($0 + 1),"el":45.0,"az":\#($0 * 20).0,"ss":30.0,"used":\#($0 < used)}"# }
            return #"{"class":"SKY","device":"/dev/ttyFAKE","satellites":["# + satellites.joined(separator: ",") + "]}"
        }
        let steps: [FakeGPSDServer.Step] = [
            .text(GPSDLines.greeting),
            .text(line(#"{"class":"TPV","device":"/dev/ttyFAKE","mode":1}"#)),
            .text(line(sky(listed: 5, used: 0))),
            .text(line(sky(listed: 7, used: 0))),
            .text(line(sky(listed: 9, used: 9))),
            .text(line(GPSDLines.tpv(0, extra: #","status":3"#))),
            .text(line(GPSDLines.tpv(100, extra: #","status":99"#))),
            .text(line(GPSDLines.tpv(200, extra: #","status":-4"#))),
            .text(line(GPSDLines.tpv(300))),
            .text(line(GPSDLines.tpv(400, extra: #","status":2"#))),
            .text(line(#"{"class":"SKY","device":"/dev/ttyFAKE","hdop":1.10}"#)),  // no list: says no count
            .text(line(GPSDLines.tpv(500, extra: #","status":1"#))),
            .text(line(GPSDLines.tpv(600, extra: #","status":1e300"#))),
            .text(line(GPSDLines.tpv(650, extra: #","status":"2""#))),
            .text(line(GPSDLines.tpv(700, extra: #","status":4"#))),
            .text(line(GPSDLines.tpv(800))),
        ]
        let server = try FakeGPSDServer(steps: steps, ending: .stayOpen)
        defer { server.stop() }
        let source = try GPSDLocationSource(configuration: GPSDConfiguration(
            host: "127.0.0.1", port: server.port, reconnectDelay: .milliseconds(50),
            maximumReconnectDelay: .milliseconds(200), watchdogTimeout: .seconds(60)))
        let recorder = EventRecorder()
        recorder.start(source)
        let delivered = await recorder.wait(timeout: .seconds(20)) { recorder in
            recorder.locations.contains { GPSDLines.milliseconds($0) == 700 }
        }
        await recorder.stop()
        #expect(delivered)
        let byTime = Dictionary(recorder.locations.map { (GPSDLines.milliseconds($0), $0) }, uniquingKeysWith: { a, _ in a })
        #expect(byTime[0]?.correctionStatus == .rtkFixed)
        #expect(byTime[100].map { $0.correctionStatus == nil } == true, "status 99 is left out")
        #expect(byTime[200].map { $0.correctionStatus == nil } == true, "status -4 is left out")
        #expect(byTime[300].map { $0.correctionStatus == nil } == true, "no status: not reported")
        #expect(byTime[400]?.correctionStatus == .dgps)
        #expect(byTime[500]?.correctionStatus == .gps)
        #expect(byTime[600].map { $0.correctionStatus == nil } == true, "status 1e300 (libgps reads 1) is left out")
        #expect(byTime[650].map { $0.correctionStatus == nil } == true, #"status "2" (libgps reads 0) is left out"#)
        #expect(byTime[700]?.correctionStatus == .rtkFloat)
        #expect(byTime[0]?.satellitesVisible == 9)
        #expect(byTime[500]?.satellitesVisible == 9, "a SKY without a list does not zero the count")
        #expect(byTime[500]?.satellitesUsed == 9, "nor the satellites used")
        let waiting = recorder.events.prefix { if case .location = $0 { false } else { true } }
            .filter { if case .error = $0 { false } else { true } }
        #expect(Array(waiting) == [.status(.connecting), .status(.noFix), .satellitesInView(5), .satellitesInView(7), .satellitesInView(9), .status(.hasFix)])
        let problems = recorder.errors.map(\.message)
        #expect(problems.contains { $0.contains("sent a TPV with status 99 (gpsd uses 0 to 9); left that value out") }, "\(problems)")
    }
}

/// Real captures through a real gpsd: the delivered correction status is the one gpsd's own oracle gives
/// for that epoch, and the satellites in view are the counts gpsd reported.
@Suite("gpsd fix quality against the .chk oracle (the shared replays)", .serialized, .enabled(if: GPSFake.isAvailable && TestData.gpsdFolder != nil))
struct FixQualityOracleTests {
    /// The `status` of the last TPV at each fix time in `name.chk` (absent: `nil`).
    static func oracleStatuses(_ name: String) throws -> [Date: Int?] {
        let text = try String(contentsOf: TestData.log(name + ".chk")!, encoding: .utf8)
        var result: [Date: Int?] = [:]
        for line in text.split(whereSeparator: \.isNewline) where line.hasPrefix("{\"class\":\"TPV\"") {
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let time = (object["time"] as? String).flatMap({ RFC3339.parse($0)?.date }),
                (object["mode"] as? Int ?? 0) >= 2
            else { continue }
            result[time] = object["status"] as? Int
        }
        return result
    }

    @Test("nmea-rtk.log: every epoch's correction status is gpsd's (DGPS, RTK fixed, or none)", .timeLimit(.minutes(2)))
    func rtkCapture() async throws {
        let oracle = try Self.oracleStatuses("nmea-rtk.log")
        let delivered = try await CaptureReplays.shared.replay("nmea-rtk.log").locations
        #expect(delivered.count * 2 >= oracle.count, "\(delivered.count) of \(oracle.count) epochs")
        for location in delivered {
            guard let entry = oracle.first(where: { abs($0.key.timeIntervalSince(location.timestamp)) < 0.001 }) else {
                Issue.record("a fix at \(RFC3339.string(from: location.timestamp)) the oracle does not have")
                continue
            }
            let wanted = entry.value.flatMap { GPSDFix.correctionStatus(gpsdStatus: $0) } ?? nil
            #expect(location.correctionStatus == wanted,
                "\(RFC3339.string(from: location.timestamp)): oracle status \(String(describing: entry.value)), got \(String(describing: location.correctionStatus))")
        }
        #expect(delivered.contains { $0.correctionStatus == .dgps })
        #expect(delivered.contains { $0.correctionStatus == .rtkFixed })
    }

    @Test("quectel.log: satellites in view are the counts of gpsd's SKY reports", .timeLimit(.minutes(2)))
    func visibleSatellites() async throws {
        let name = "quectel.log"
        let text = try String(contentsOf: TestData.log(name + ".chk")!, encoding: .utf8)
        let counts = Set(text.split(whereSeparator: \.isNewline).filter { $0.hasPrefix("{\"class\":\"SKY\"") }.compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["nSat"] as? Int
        })
        let delivered = try await CaptureReplays.shared.replay(name).locations
        let visible = delivered.compactMap(\.satellitesVisible)
        #expect(!visible.isEmpty, "satellites in view come from SKY")
        #expect(visible.allSatisfy(counts.contains), "\(Set(visible)) not all among gpsd's nSat \(counts)")
        #expect(delivered.allSatisfy { ($0.satellitesUsed ?? 0) <= ($0.satellitesVisible ?? Int.max) })
    }
}
