// Testing your own location code with a GPX file: the test writes a small track with GPXWriter into a
// temporary folder, replays it through a LocationManager as fast as possible, and checks what arrived.
// No gpsd, no waiting: the same fixes in the same order on every run.
import ExampleSupport
import Foundation
import LocationCore
import LocationGPX
import LocationTesting
import Testing

@Suite struct ReplayTests {
    /// Five fixes one second apart, walking north from the Brandenburg Gate.
    static let track: [Location] = (0..<5).map { second in
        Location(
            latitude: 52.5163 + Double(second) * 0.0001, longitude: 13.3777, horizontalAccuracy: 5,
            timestamp: Date(timeIntervalSince1970: 1_767_258_000 + Double(second)))
    }

    /// Writes `locations` as a GPX file in a new temporary folder and returns its path.
    static func writeGPX(_ locations: [Location]) throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("replay-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("walk.gpx").path
        let writer = try GPXWriter(path: path)
        try writer.beginTrack(name: "walk")
        try writer.write(contentsOf: locations)
        try writer.finish()
        return path
    }

    @Test("every fix of the file arrives once, in order, with its recorded time")
    func replayDeliversTheTrack() async throws {
        let path = try Self.writeGPX(Self.track)
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }

        let application = Application()
        let manager = try LocationManager(
            source: GPXReplaySource(path: path, options: .init(pacing: .asFastAsPossible)), application: application)
        let delegate = RecordingDelegate()  // from LocationTesting: records every call
        manager.delegate = delegate
        try application.transition(to: .active)
        manager.startUpdatingLocation()

        var delivered: [Location] = []
        for await event in manager.events {
            if case .locations(let locations, .live) = event { delivered += locations }
            if case .sourceStatus(.ended) = event { break }
        }
        manager.stopUpdatingLocation()

        #expect(delivered.map(\.timestamp) == Self.track.map(\.timestamp))
        for (got, written) in zip(delivered, Self.track) {
            #expect(abs(got.latitude - written.latitude) < 1e-7)
            #expect(abs(got.longitude - written.longitude) < 1e-7)
            #expect(got.horizontalAccuracy == written.horizontalAccuracy)
        }
        // The delegate is an adapter over the same stream, so it sees the same fixes (called serially, on
        // the thread that caused each event: give it a moment to catch up with the stream).
        for _ in 0..<200 where delegate.locations.count < Self.track.count { try await Task.sleep(for: .milliseconds(10)) }
        #expect(delegate.locations.map(\.timestamp) == Self.track.map(\.timestamp))
    }

    @Test("a delegate with its state behind a Mutex collects the same fixes")
    func collectorSeesTheReplay() async throws {
        let path = try Self.writeGPX(Self.track)
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }

        let application = Application()
        let manager = try LocationManager(
            source: GPXReplaySource(path: path, options: .init(pacing: .asFastAsPossible)), application: application)
        let collector = FixCollector()
        manager.delegate = collector
        try application.transition(to: .active)
        manager.startUpdatingLocation()
        for await event in manager.events {
            if case .sourceStatus(.ended) = event { break }
        }
        manager.stopUpdatingLocation()

        for _ in 0..<200 where collector.snapshot.live.count < Self.track.count {
            try await Task.sleep(for: .milliseconds(10))
        }
        let seen = collector.snapshot
        #expect(seen.live.count == Self.track.count)
        #expect(seen.heldBatches.isEmpty)
        #expect(seen.errors.isEmpty)
    }
}
