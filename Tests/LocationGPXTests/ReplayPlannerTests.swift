import Foundation
import LocationCore
import Testing

@testable import LocationGPX

/// The replay's schedule (track time, timestamps, derived values), without any clock.
@Suite struct ReplayPlannerTests {
    func steps(
        _ gpx: String, _ options: GPXReplaySource.Options = .init(), limit: Int = 10_000
    ) throws -> [ReplayPlanner.Step] {
        let path = try writeGPX(gpx)
        let planner = try ReplayPlanner(path: path, options: options, startDate: replayStart)
        var steps: [ReplayPlanner.Step] = []
        while steps.count < limit, let step = try planner.next() { steps.append(step) }
        return steps
    }

    @Test func timedTrackFollowsTheTimestamps() throws {
        let gpx = gpx11(track([[trkpt(47, 8, t(0), ele: 400), trkpt(47.001, 8, t(1.5)), trkpt(47.002, 8, t(4))]]))
        let steps = try steps(gpx)
        #expect(closeAll(steps.map(\.trackTime), [.s(0), .s(1.5), .s(4)]))
        #expect(steps.map(\.location.timestamp) == [date(t(0)), date(t(1.5)), date(t(4))])
        #expect(steps.allSatisfy { $0.location.isSimulated && $0.location.source == "replay.gpx" })
        #expect(steps[0].location.altitude == 400)
        #expect(steps[1].location.altitude == nil, "missing <ele> stays nil")
        #expect(steps.allSatisfy { $0.stepBack == nil })
    }

    @Test func duplicateAndBackwardTimesAreDeliveredRightAfterAndFlagged() throws {
        let gpx = gpx11(
            track([[trkpt(47, 8, t(0)), trkpt(47, 8.001, t(1)), trkpt(47, 8.002, t(1)), trkpt(47, 8.003, t(0.5)), trkpt(47, 8.004, t(3))]]))
        let steps = try steps(gpx)
        // After the step back, 3 s is 2 s after the latest time (1 s), as (t − t₀) says.
        #expect(closeAll(steps.map(\.trackTime), [.s(0), .s(1), .s(1), .s(1), .s(3)]))
        #expect(steps.map(\.stepBack) == [nil, nil, 0, -0.5, nil])
        // Recorded timestamps stay as recorded.
        #expect(steps[3].location.timestamp == date(t(0.5)))
    }

    @Test func untimedPointsMoveAtConstantSpeed() throws {
        let gpx = gpx11("<rte><rtept lat=\"0\" lon=\"0\"/><rtept lat=\"0\" lon=\"0.001\"/><rtept lat=\"0.001\" lon=\"0.001\"/></rte>")
        var options = GPXReplaySource.Options(untimedSpeed: 2)
        let steps = try steps(gpx, options)
        let metres = Location(latitude: 0, longitude: 0, timestamp: replayStart)
            .distance(from: Location(latitude: 0, longitude: 0.001, timestamp: replayStart))
        #expect(close(steps[1].trackTime, .s(metres / 2)))
        #expect(close(steps[2].trackTime - steps[1].trackTime, .s(metres / 2)))
        #expect(steps.allSatisfy { $0.location.speed == 2 })
        #expect(abs(steps[0].location.course! - 90) < 1e-6, "east, derived towards the next point")
        #expect(abs(steps[1].location.course! - 90) < 1e-6)
        #expect(abs(steps[2].location.course! - 0) < 1e-6, "then north")
        // As recorded, untimed points get times continued from the replay's start along the geometry.
        #expect(steps[0].location.timestamp == replayStart)
        #expect(abs(steps[2].location.timestamp.timeIntervalSince(replayStart) - metres) < 1e-6)

        options.derivesSpeedAndCourse = false
        #expect(try self.steps(gpx, options).allSatisfy { $0.location.speed == nil && $0.location.course == nil })
    }

    @Test func longGapsBetweenSegmentsAndTracksAreCompressed() throws {
        let gpx = gpx11(
            track([[trkpt(47, 8, t(0)), trkpt(47, 8, t(100))], [trkpt(47, 8, t(3700)), trkpt(47, 8, t(3705))]])
                + track([[trkpt(47, 8, t(3706))], [trkpt(47, 8, t(9000))]]))
        let compressed = try steps(gpx)
        // 100 s inside a segment stays; 1 h between segments → 10 s; 1 s between tracks stays; 5294 s → 10 s.
        #expect(closeAll(compressed.map(\.trackTime), [.s(0), .s(100), .s(110), .s(115), .s(116), .s(126)]))
        let kept = try steps(gpx, .init(maxGap: nil))
        #expect(closeAll(kept.map(\.trackTime), [.s(0), .s(100), .s(3700), .s(3705), .s(3706), .s(9000)]))
        let short = try steps(gpx, .init(maxGap: .zero))
        #expect(closeAll(short.map(\.trackTime), [.s(0), .s(100), .s(100), .s(105), .s(105), .s(105)]))
    }

    @Test func startAtAnIndexOrATimeOffset() throws {
        let gpx = gpx11(track([(0..<10).map { trkpt(47, 8 + Double($0) * 0.001, t(Double($0) * 2)) }]))
        let fromIndex = try steps(gpx, .init(start: .index(3)))
        #expect(fromIndex.count == 7)
        #expect(fromIndex[0].location.timestamp == date(t(6)))
        #expect(closeAll(fromIndex.map(\.trackTime), (0..<7).map { .s(Double($0) * 2) }))

        let fromOffset = try steps(gpx, .init(start: .offset(.seconds(5))))
        #expect(fromOffset[0].location.timestamp == date(t(6)))
        #expect(close(fromOffset[0].trackTime, .s(1)), "the first point after the offset comes 1 s in")

        #expect(try steps(gpx, .init(start: .index(10))).isEmpty)
        #expect(try steps(gpx, .init(start: .offset(.seconds(19)))).isEmpty)
        #expect(try steps(gpx, .init(start: .index(50), loop: true)).isEmpty, "a loop over nothing ends")
    }

    @Test func loopsContinueTrackTimeAndTimestamps() throws {
        let gpx = gpx11(track([[trkpt(47, 8, t(0)), trkpt(47, 8.001, t(10)), trkpt(47, 8.002, t(20))]]))
        let recorded = try steps(gpx, .init(loop: true, loopGap: .seconds(2)), limit: 9)
        #expect(recorded.map(\.pass) == [0, 0, 0, 1, 1, 1, 2, 2, 2])
        #expect(closeAll(recorded.map(\.trackTime), [0, 10, 20, 22, 32, 42, 44, 54, 64].map { .s($0) }))
        #expect(recorded.map(\.location.timestamp) == [0, 10, 20, 22, 32, 42, 44, 54, 64].map { date(t($0)) })

        let withStart = try steps(gpx, .init(start: .index(1), loop: true), limit: 4)
        #expect(withStart.map(\.location.timestamp) == [10, 20, 21, 31].map { date(t($0)) })
        #expect(closeAll(withStart.map(\.trackTime), [0, 10, 11, 21].map { .s($0) }))
    }

    @Test func rebasedTimestampsStartNowAndFollowTheSchedule() throws {
        let gpx = gpx11(track([[trkpt(47, 8, t(0)), trkpt(47, 8.001, t(10)), trkpt(47, 8.002, t(30))]]))
        let fast = try steps(gpx, .init(pacing: .speedFactor(4), timestamps: .rebasedToNow))
        #expect(fast.map(\.location.timestamp) == [0, 2.5, 7.5].map { replayStart + $0 })
        let immediate = try steps(gpx, .init(pacing: .asFastAsPossible, timestamps: .rebasedToNow))
        #expect(immediate.map(\.location.timestamp) == [0, 10, 30].map { replayStart + $0 })
    }

    @Test func derivedSpeedAndCourse() throws {
        let gpx = gpx11(
            track([
                [
                    trkpt(0, 0, t(0)), trkpt(0, 0.001, t(10)),
                    trkpt(0, 0.001, t(20), extra: "<extensions><loc:speed xmlns:loc=\"https://swift-location.dev/xmlns/gpx-location/1\">7</loc:speed></extensions>"),
                    trkpt(0, 0.001, t(30)),
                ],
                [trkpt(1, 1, t(40))],
            ]))
        let steps = try steps(gpx)
        let metres = Location(latitude: 0, longitude: 0, timestamp: replayStart)
            .distance(from: Location(latitude: 0, longitude: 0.001, timestamp: replayStart))
        #expect(abs(steps[0].location.speed! - metres / 10) < 1e-9, "first point: towards the next")
        #expect(abs(steps[1].location.speed! - metres / 10) < 1e-9)
        #expect(abs(steps[1].location.course! - 90) < 1e-6)
        #expect(steps[2].location.speed == 7, "the file's speed wins")
        #expect(steps[3].location.speed == 0, "standing still")
        #expect(steps[3].location.course == nil, "no course without movement")
        #expect(steps[4].location.speed == nil && steps[4].location.course == nil, "a lone point in its segment")
    }

    @Test func automaticSelectionPrefersTracksThenRoutesThenWaypoints() throws {
        let waypoints = #"<wpt lat="1" lon="1"/><wpt lat="2" lon="2"/>"#
        let route = #"<rte><rtept lat="3" lon="3"/></rte>"#
        let tracks = track([[trkpt(4, 4, t(0))]])
        #expect(try steps(gpx11(waypoints + route + tracks)).map(\.location.latitude) == [4])
        #expect(try steps(gpx11(waypoints + route)).map(\.location.latitude) == [3])
        #expect(try steps(gpx11(waypoints)).map(\.location.latitude) == [1, 2])
        #expect(try steps(gpx11(waypoints + route + tracks), .init(selection: .waypoints)).map(\.location.latitude) == [1, 2])
        #expect(try steps(gpx11(waypoints), .init(selection: .tracks)).isEmpty)
    }

    @Test func optionsAreValidated() {
        // Each refused with the option and the value named, and the allowed range where there is one.
        let bad: [(GPXReplaySource.Options, String)] = [
            (.init(pacing: .speedFactor(0)), "replay speed factor: 0 is zero; use 0.001…1000000 ×"),
            (.init(pacing: .speedFactor(-1)), "replay speed factor: -1 is negative; use 0.001…1000000 ×"),
            (.init(pacing: .speedFactor(.infinity)), "replay speed factor: inf is infinite; use 0.001…1000000 ×"),
            (.init(pacing: .speedFactor(.nan)), "replay speed factor: nan is not a number; use 0.001…1000000 ×"),
            (.init(start: .index(-1)), "replay start index -1 must be ≥ 0"),
            (.init(start: .offset(.seconds(-1))), "replay start offset -1.0 seconds must be ≥ 0"),
            (.init(loopGap: .zero), "replay loop gap 0.0 seconds must be > 0"),
            (.init(maxGap: .seconds(-1)), "replay maximum gap: -1 is negative; use 0…1000000000000 s"),
            (.init(untimedSpeed: 0), "replay speed for untimed points: 0 is zero; use 0.001…1000000 m/s"),
            (.init(untimedSpeed: .nan), "replay speed for untimed points: nan is not a number; use 0.001…1000000 m/s"),
        ]
        for (options, message) in bad {
            #expect(throws: LocationError(.invalidConfiguration, message)) { try GPXReplaySource(path: "x.gpx", options: options) }
        }
        #expect(throws: Never.self) { try GPXReplaySource(path: "x.gpx", options: .init(pacing: .speedFactor(1e-3))) }
    }

    @Test(.enabled(if: TestData.isAvailable, "real GPX files not found: SKIPPED"))
    func realRecordingWithDuplicateTimestamps() throws {
        let path = TestData.path("coregpx__GPXTest-TrackPointOnly.gpx")
        let planner = try ReplayPlanner(path: path, options: .init(), startDate: replayStart)
        var steps: [ReplayPlanner.Step] = []
        while let step = try planner.next() { steps.append(step) }
        #expect(steps.count == 4142)
        let duplicates = steps.filter { $0.stepBack == 0 }.count
        #expect(duplicates > 0)
        #expect(zip(steps, steps.dropFirst()).allSatisfy { $0.trackTime <= $1.trackTime })
        // Speed is derived wherever time advances; where it does not (Δt = 0) there is none to derive.
        #expect(steps.filter { $0.location.speed == nil }.count == duplicates)
        let last = try #require(steps.last)
        #expect(close(last.trackTime, .s(date("2018-11-29T09:23:18Z").timeIntervalSince(date("2018-11-29T01:48:58Z")))))
    }

    @Test(.enabled(if: TestData.isAvailable, "real GPX files not found: SKIPPED"))
    func realFileMixingUntimedAndTimedPoints() throws {
        let path = TestData.path("gpxpy__cerknicko-without-times.gpx")
        let planner = try ReplayPlanner(path: path, options: .init(), startDate: replayStart)
        var steps: [ReplayPlanner.Step] = []
        while let step = try planner.next() { steps.append(step) }
        #expect(steps.count == 296)
        #expect(zip(steps, steps.dropFirst()).allSatisfy { $0.trackTime <= $1.trackTime })
        #expect(steps.last?.location.timestamp == date("2010-08-05T16:23:49Z"))
    }
}
