import Foundation
import LocationCore
import Testing
@testable import LocationGPSD

/// Each real capture replayed through a real gpsd must come out as gpsd's own oracle says.
@Suite("gpsd replay against the .chk oracle", .enabled(if: GPSFake.isAvailable, GPSFake.missing), .enabled(if: TestData.gpsdFolder != nil, TestData.missing))
struct ReplayTests {
    @Test(.timeLimit(.minutes(2)), arguments: CaptureReplays.captures.map(\.name))
    func capture(_ name: String) async throws {
        let expected = try TestData.expectedFixes(name)
        let recorder = try await CaptureReplays.shared.replay(name)

        let delivered = recorder.locations
        func oracle(at time: Date) -> TestData.ExpectedFix? {
            expected.first { abs($0.time.timeIntervalSince(time)) < 0.001 }
        }
        // One location per epoch, in order, never repeated.
        let times = delivered.map(\.timestamp)
        let ordered = zip(times, times.dropFirst()).allSatisfy { $0 < $1 }
        #expect(ordered, "\(name): epochs repeated or out of order")
        for (index, location) in delivered.enumerated() {
            guard let fix = oracle(at: location.timestamp) else {
                Issue.record("\(name): delivered a fix at \(RFC3339.string(from: location.timestamp)) the oracle does not have")
                continue
            }
            let samePosition = abs(location.latitude - fix.latitude) < 1e-7 && abs(location.longitude - fix.longitude) < 1e-7
            #expect(samePosition,
                "\(name): position at \(RFC3339.string(from: location.timestamp))")
            #expect(location.fixMode != nil)
            // Every value the epoch's last TPV carries is mapped to its Location property. gpsd only
            // starts reading the device at our WATCH, so its first epochs lack what it derives from
            // earlier sentences (climb, error estimates, a GGA it never saw): compare from the third on.
            // courseAccuracy (gpsd's "epd") is among the compared fields, but none of the captures in
            // ../shared/testdata/gpsd carries an "epd" in its .chk oracle (their receivers report no
            // course error), so against these captures it is never compared here; the mapping of "epd" to
            // courseAccuracy is checked in EpochMergerTests.fieldsMapAndAbsentValuesAreNil.
            for (json, value) in TestData.comparedFields where index >= 2 {
                guard let wanted = fix.fields[json] else { continue }
                let got = value(location)
                let same = got.map { abs($0 - wanted) < 1e-6 } ?? false
                #expect(same, "\(name) epoch \(index) at \(RFC3339.string(from: location.timestamp)): \(json) \(wanted), got \(String(describing: got))")
            }
            #expect(location.source?.hasPrefix("/dev/") == true, "\(name): source is the gpsd device path")
        }
        let oracleText = try String(contentsOf: TestData.log(name + ".chk")!, encoding: .utf8)
        if oracleText.contains("\"uSat\":") && oracleText.contains("\"used\":true") {
            #expect(delivered.contains { ($0.satellitesUsed ?? 0) > 0 }, "\(name): satellites used come from SKY")
        }
        // Dilutions of precision come from SKY too: every delivered hdop is one gpsd reported.
        let skyHDOPs = oracleText.split(separator: "\n").filter { $0.contains("\"class\":\"SKY\"") }.compactMap { line in
            ((try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any])?["hdop"] as? Double
        }
        if !skyHDOPs.isEmpty {
            let delivered = delivered.compactMap(\.hdop)
            #expect(!delivered.isEmpty, "\(name): hdop comes from SKY")
            #expect(delivered.allSatisfy { hdop in skyHDOPs.contains { abs($0 - hdop) < 1e-9 } }, "\(name): \(delivered)")
        }
        if expected.isEmpty {
            let none = delivered.isEmpty
            #expect(none, "\(name): a capture without fixes must deliver nothing")
        } else {
            // gpsd drops the sentences sent before our WATCH took effect; from the first delivered
            // epoch on, every epoch must arrive.
            let firstDelivered = delivered.first?.timestamp ?? .distantFuture
            let missing = expected.filter { fix in
                !delivered.contains { abs($0.timestamp.timeIntervalSince(fix.time)) < 0.001 }
            }
            let missedLater = missing.filter { $0.time > firstDelivered }
            #expect(missedLater.isEmpty,
                "\(name): \(missedLater.count) epochs missing after the stream began")
            #expect(delivered.count * 2 >= expected.count,
                "\(name): only \(delivered.count) of \(expected.count) epochs delivered")
            if let last = expected.last {
                let lastArrived = delivered.last.map { abs($0.timestamp.timeIntervalSince(last.time)) < 0.001 } ?? false
                #expect(lastArrived, "\(name): the last epoch arrives")
            }
        }
        // The line and value checks never turn down what a real gpsd sends.
        #expect(recorder.linesSkipped == 0, "\(name): \(recorder.linesSkipped) of gpsd's lines refused")
        let invalid = recorder.errors.filter { $0.code == .invalidData }
        #expect(invalid.isEmpty, "\(name): \(invalid)")
        print("\(name): delivered \(delivered.count) of \(expected.count) epochs, \(recorder.messagesRead) messages read")
    }
}
