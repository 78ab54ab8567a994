import Foundation
import LocationCore
import LocationTesting
import Testing

@testable import LocationGPX

/// GPX carries the correction status and satellite counts: `<fix>` and `<sat>` where GPX 1.1 has a place
/// for them, the `loc:` extension for the rest, and the reader reads back what the writer writes.
@Suite("Fix quality in GPX")
struct FixQualityGPXTests {
    /// Every combination of correction status (and none), fix mode (and none) and satellite counts.
    static var combinations: [Location] {
        var result: [Location] = []
        var index = 0
        for status in [nil] + CorrectionStatus.allCases.map(Optional.some) {
            for mode in [nil, FixMode.twoDimensional, .threeDimensional] {
                for (used, visible) in [(nil, nil), (9, 14), (nil, 3), (0, 0)] as [(Int?, Int?)] {
                    var fix = LocationFixtures.walk(index)
                    fix.correctionStatus = status
                    fix.fixMode = mode
                    fix.satellitesUsed = used
                    fix.satellitesVisible = visible
                    fix.hdop = index % 2 == 0 ? 0.9 : nil
                    result.append(fix)
                    index += 1
                }
            }
        }
        return result
    }

    @Test("what the writer writes, the reader reads back: every status with every fix mode and satellite count")
    func roundTrip() throws {
        let written = Self.combinations
        let read = try parse(bytes: GPXWriter.document(for: written)).map { try $0.location() }
        #expect(read.count == written.count)
        for (fix, back) in zip(written, read) where fix != back {
            Issue.record("written \(String(describing: fix.correctionStatus)) \(String(describing: fix.fixMode)) \(String(describing: fix.satellitesVisible))\nread \(String(describing: back.correctionStatus)) \(String(describing: back.fixMode)) \(String(describing: back.satellitesVisible))")
        }
    }

    @Test("<fix> says dgps for DGPS and RTK, pps for P(Y), else the dimension; <sat> is the satellites used")
    func standardElements() throws {
        func text(_ status: CorrectionStatus?, _ mode: FixMode?) throws -> String {
            var fix = LocationFixtures.walk(0)
            fix.correctionStatus = status
            fix.fixMode = mode
            fix.satellitesUsed = 7
            fix.satellitesVisible = 12
            return String(decoding: try GPXWriter.document(for: [fix]), as: UTF8.self)
        }
        #expect(try text(.dgps, .threeDimensional).contains("<fix>dgps</fix>"))
        #expect(try text(.rtkFixed, .threeDimensional).contains("<fix>dgps</fix>"))
        #expect(try text(.rtkFloat, .twoDimensional).contains("<fix>dgps</fix>"))
        #expect(try text(.precisePositioning, .threeDimensional).contains("<fix>pps</fix>"))
        #expect(try text(nil, .threeDimensional).contains("<fix>3d</fix>"))
        #expect(try text(.deadReckoning, .twoDimensional).contains("<fix>2d</fix>"))
        #expect(try !text(nil, nil).contains("<fix>"))
        let plain = try text(nil, .threeDimensional)
        #expect(plain.contains("<sat>7</sat>"))
        #expect(plain.contains("<loc:satellitesVisible>12</loc:satellitesVisible>"))
        #expect(!plain.contains("correctionStatus"))
        #expect(!plain.contains("loc:fixMode"))
        let rtk = try text(.rtkFixed, .threeDimensional)
        #expect(rtk.contains("<loc:correctionStatus>rtk-fixed</loc:correctionStatus>"))
        #expect(rtk.contains("<loc:fixMode>3D</loc:fixMode>"))
        // DGPS is said by <fix> alone.
        #expect(try !text(.dgps, nil).contains("correctionStatus"))
    }

    @Test("the output with every status stays valid GPX 1.1")
    func schemaValid() throws {
        let errors = validate(try GPXWriter.document(for: Self.combinations), againstSchema: gpx11Schema)
        #expect(errors.isEmpty, "\(errors.prefix(5))")
    }

    @Test("a plain GPX file's <fix>dgps</fix> and <fix>pps</fix> read as correction statuses")
    func readsOtherFiles() throws {
        let points = try parse(gpx11("""
            <trk><trkseg>
            <trkpt lat="1" lon="2"><time>2024-05-01T06:00:00Z</time><fix>dgps</fix><sat>8</sat></trkpt>
            <trkpt lat="1" lon="2"><time>2024-05-01T06:00:01Z</time><fix>pps</fix></trkpt>
            <trkpt lat="1" lon="2"><time>2024-05-01T06:00:02Z</time><fix>none</fix></trkpt>
            <trkpt lat="1" lon="2"><time>2024-05-01T06:00:03Z</time><fix>3d</fix></trkpt>
            </trkseg></trk>
            """)).map { try $0.location() }
        #expect(points.map(\.correctionStatus) == [.dgps, .precisePositioning, nil, nil])
        #expect(points.map(\.fixMode) == [nil, nil, nil, .threeDimensional])
        #expect(points[0].satellitesUsed == 8)
        #expect(points[0].satellitesVisible == nil)
    }

    @Test("unknown words and impossible counts in <fix>, <sat> and the loc: elements are refused, naming the element")
    func hostileValues() {
        let namespace = #" xmlns:loc="\#(GPXNamespace.location)""#
        func point(_ inner: String) -> String {
            gpx11(#"<trk><trkseg><trkpt lat="1" lon="2"><time>2024-05-01T06:00:00Z</time>\#(inner)</trkpt></trkseg></trk>"#, namespaces: namespace)
        }
        let cases: [(String, String)] = [
            ("<extensions><loc:correctionStatus>warp-drive</loc:correctionStatus></extensions>", "correctionStatus"),
            ("<extensions><loc:correctionStatus>RTK-FIXED</loc:correctionStatus></extensions>", "correctionStatus"),
            ("<extensions><loc:fixMode>4D</loc:fixMode></extensions>", "fixMode"),
            ("<extensions><loc:satellitesVisible>-1</loc:satellitesVisible></extensions>", "satellitesVisible"),
            ("<extensions><loc:satellitesVisible>NaN</loc:satellitesVisible></extensions>", "satellitesVisible"),
            ("<extensions><loc:satellitesVisible>99999999999999999999999</loc:satellitesVisible></extensions>", "satellitesVisible"),
            ("<extensions><loc:satellitesVisible>1.5</loc:satellitesVisible></extensions>", "satellitesVisible"),
            ("<sat>-3</sat>", "sat"),
            ("<sat>1e300</sat>", "sat"),
            ("<fix>rtk</fix>", "fix"),
        ]
        for (inner, element) in cases {
            let error = parseError(point(inner))
            #expect(error?.code == .invalidValue, "\(inner)")
            #expect(error?.message.contains(element) == true, "\(inner): \(String(describing: error))")
        }
        // Empty elements are absent values, as everywhere in GPX.
        let empty = try? parse(point("<extensions><loc:correctionStatus> </loc:correctionStatus><loc:satellitesVisible></loc:satellitesVisible></extensions>"))
        #expect(empty?.first?.correctionStatus == nil)
        #expect(empty?.first?.satellitesVisible == nil)
    }

    @Test("a negative satellite count set on a location is not written")
    func negativeCountsAreLeftOut() throws {
        var fix = LocationFixtures.walk(0)
        fix.satellitesVisible = -4
        fix.satellitesUsed = -2
        let text = String(decoding: try GPXWriter.document(for: [fix]), as: UTF8.self)
        #expect(!text.contains("satellitesVisible"))
        #expect(!text.contains("<sat>"))
    }
}
