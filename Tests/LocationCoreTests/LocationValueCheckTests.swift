import Foundation
import LocationCore
import LocationTesting
import Testing

@Suite("LocationValueCheck: one check of a fix's values for every source")
struct LocationValueCheckTests {
    static let good = LocationFixtures.walk(count: 1)[0]

    @Test("a fix whose values are all in range passes unchanged")
    func validPasses() {
        #expect(LocationValueCheck.check(Self.good) == .valid)
    }

    @Test("negative accuracies, absurd speeds and altitudes are left out, each named")
    func outOfRangeValuesAreLeftOut() {
        var location = Self.good
        location.horizontalAccuracy = -5
        location.speedAccuracy = -1
        location.speed = 1e308
        location.altitude = -1e308
        location.course = .nan
        guard case .leftOut(let checked, let problems) = LocationValueCheck.check(location) else {
            Issue.record("the fix was not changed")
            return
        }
        #expect(checked.horizontalAccuracy == nil && checked.speedAccuracy == nil && checked.speed == nil)
        #expect(checked.altitude == nil && checked.course == nil)
        #expect(checked.latitude == location.latitude && checked.timestamp == location.timestamp)
        #expect(problems.map(\.field) == ["altitude", "horizontalAccuracy", "speed", "speedAccuracy", "course"])
        #expect(problems.first { $0.field == "horizontalAccuracy" }?.description == "horizontalAccuracy -5 (outside 0…40000000 m)")
    }

    @Test("an impossible coordinate refuses the whole fix")
    func impossibleCoordinateIsRefused() {
        var location = Self.good
        location.latitude = 91
        #expect(LocationValueCheck.check(location) == .refused(.init(field: "latitude", description: "latitude 91 (outside -90…90 °)")))
        location.latitude = .infinity
        guard case .refused = LocationValueCheck.check(location) else {
            Issue.record("an infinite latitude was not refused")
            return
        }
    }

    @Test("the context delivers the checked fix and reports each bad field once, however often it recurs")
    func contextReportsOncePerField() throws {
        let events = Locked<[LocationSourceEvent]>([])
        let context = LocationSourceContext(clock: ManualClock(), mode: .continuous) { event in events.withLock { $0.append(event) } }
        var bad = Self.good
        bad.horizontalAccuracy = -5
        var impossible = Self.good
        impossible.longitude = 200
        for _ in 0..<3 { context.deliver(bad) }
        for _ in 0..<3 { context.deliver(impossible) }
        context.deliver(Self.good)
        let errors = events.value.compactMap { if case .error(let error) = $0 { error } else { nil } }
        let locations = events.value.compactMap { if case .location(let location) = $0 { location } else { nil } }
        try #require(errors.map(\.code) == [.invalidData, .invalidData], "\(errors)")
        #expect(errors[0].message.contains("horizontalAccuracy -5") && errors[0].message.contains("left out"))
        #expect(errors[1].message.contains("longitude 200") && errors[1].message.contains("refused"))
        #expect(locations.count == 4, "three with the accuracy left out, then the good one; the impossible ones never")
        #expect(locations.prefix(3).allSatisfy { $0.horizontalAccuracy == nil })
        #expect(locations.last == Self.good)
    }
}
