import Foundation

/// Circular regions and their states, evaluated fix by fix in fix-time order, with hysteresis so that a
/// receiver standing on an edge never flaps (a `CLMonitor` for Linux, without a count limit).
///
/// - **Enter** when a fix is inside the radius (from `outside`, or `unknown`).
/// - **Exit** only when a fix is clearly outside, `distance − accuracy > radius + max(0.1 × radius, 20 m)`,
///   on two such fixes in a row: σ 8 m noise around an edge is within the margin, and one wild fix is not
///   enough.
/// - **Dwell** once a stay inside has lasted the region's loitering delay, in fix time.
/// - A fix whose accuracy is worse than ``Configuration/accuracyLimit``, or without a valid coordinate, changes
///   nothing and breaks no run of exit fixes. A fix of unknown accuracy counts as exact.
/// - A region starts `unknown` (or as assumed when added): the first fix inside enters it; a fix clearly
///   outside makes it `outside` without an event.
/// - Fixes count in fix-time order: one no newer than the last evaluated, by up to a day (the same fix
///   again, a batch delivered twice after a crash, a late fix), changes nothing. One more than a day older is
///   taken as the clock having been wrong before (a receiver's bogus date once), not as late: it counts, and
///   the order starts again from it, so one fix dated in the future cannot silence the regions for good.
///
/// Each fix costs the regions near it, not all of them: regions are indexed in a grid of 1° cells by how
/// far a fix can be and still matter to them (radius, exit margin and the accuracy limit), and only those of
/// the fix's cell, those inside and the few larger than the index are looked at.
///
/// A value type: the manager keeps it under its lock; ``snapshot`` and ``init(snapshot:configuration:)``
/// carry it across a restart.
public struct RegionMonitor: Sendable {
    /// What changes states.
    public struct Configuration: Sendable, Hashable {
        /// Fixes whose horizontal accuracy is worse than this many metres never change a state (default 100).
        public var accuracyLimit: Double
        /// How many clearly-outside fixes in a row make an exit (default 2).
        public var exitConfirmations: Int

        /// A configuration; values out of range are clamped (an accuracy limit of at least 1 m, at least one
        /// confirmation).
        public init(accuracyLimit: Double = 100, exitConfirmations: Int = 2) {
            self.accuracyLimit = accuracyLimit.isFinite ? max(1, accuracyLimit) : 100
            self.exitConfirmations = max(1, exitConfirmations)
        }
    }

    /// One region's state, as a snapshot carries it.
    public struct RegionRecord: Sendable, Hashable, Codable {
        /// The region.
        public var region: CircularRegion
        /// Its state.
        public var state: RegionState
        /// Clearly-outside fixes in a row, while inside.
        public var exitVotes: Int
        /// When the current stay inside began (fix time), while inside.
        public var enteredAt: Date?
        /// Whether this stay has had its dwell event.
        public var dwelt: Bool
    }

    /// Everything a monitor knows, to save and restore.
    public struct Snapshot: Sendable, Hashable, Codable {
        /// The regions with their states, by identifier.
        public var records: [RegionRecord]
        /// The fix time of the last fix evaluated: an older one is not evaluated again.
        public var lastFixTime: Date?
    }

    /// What changes states.
    public let configuration: Configuration

    private var records: [RegionRecord?] = []
    private var slots: [String: Int] = [:]
    private var freeSlots: [Int] = []
    /// Grid cell → slots of the regions a fix in that cell may concern.
    private var cells: [Int: [Int]] = [:]
    /// Regions too large for the grid: looked at on every fix.
    private var large: Set<Int> = []
    /// Regions inside (they may be left from anywhere), and regions not yet looked at by any fix.
    private var inside: Set<Int> = []
    private var unswept: Set<Int> = []
    /// The fix time of the last fix evaluated.
    private var lastFixTime: Date?
    /// The fix time of the last fix evaluated: fixes up to a day older change nothing.
    package var lastEvaluatedFixTime: Date? { lastFixTime }

    /// How much older than the last fix evaluated a fix may be and still be taken as late (and skipped).
    package static let lateFixWindow: TimeInterval = 86_400

    /// The most cells a region may take in the index; a larger one is looked at on every fix.
    static let maximumCells = 4096
    /// Metres in a degree of latitude.
    private static let metresPerDegree = Location.meanEarthRadius * .pi / 180

    /// An empty monitor.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// A monitor as `snapshot` left it.
    public init(snapshot: Snapshot, configuration: Configuration = Configuration()) {
        self.configuration = configuration
        lastFixTime = snapshot.lastFixTime
        // A snapshot from a file: a name twice keeps the first; a count of exit fixes out of range is reset.
        for var record in snapshot.records where slots[record.region.identifier] == nil {
            if !(0..<configuration.exitConfirmations).contains(record.exitVotes) { record.exitVotes = 0 }
            insert(record)
        }
    }

    /// The regions and their states.
    public var snapshot: Snapshot {
        Snapshot(records: records.compactMap { $0 }.sorted { $0.region.identifier < $1.region.identifier }, lastFixTime: lastFixTime)
    }

    /// The regions monitored, by identifier.
    public var regions: [CircularRegion] { snapshot.records.map(\.region) }

    /// How many regions are monitored.
    public var count: Int { slots.count }

    /// The state of the region `identifier`, or `nil` when it is not monitored.
    public func state(of identifier: String) -> RegionState? {
        slots[identifier].flatMap { records[$0]?.state }
    }

    /// Starts monitoring `region` (replacing one of the same identifier, whose state is forgotten) in
    /// `state`: `unknown` by default, or as assumed (as `CLMonitor.add(_:identifier:assuming:)`), so that a
    /// region the device is known to be in gives no enter at the first fix.
    public mutating func add(_ region: CircularRegion, assuming state: RegionState = .unknown) {
        // The same region again (an app registering its regions at every launch) keeps its state: a second
        // enter without an exit would be a lie.
        if state == .unknown, let slot = slots[region.identifier], records[slot]?.region == region { return }
        remove(region.identifier)
        insert(RegionRecord(region: region, state: state, exitVotes: 0, enteredAt: nil, dwelt: false))
    }

    /// Stops monitoring the region `identifier`; whether it was monitored.
    @discardableResult
    public mutating func remove(_ identifier: String) -> Bool {
        guard let slot = slots.removeValue(forKey: identifier), let record = records[slot] else { return false }
        for cell in Self.cells(of: record.region, reach: reach(of: record.region)) ?? [] {
            cells[cell]?.removeAll { $0 == slot }
            if cells[cell]?.isEmpty == true { cells[cell] = nil }
        }
        large.remove(slot)
        inside.remove(slot)
        unswept.remove(slot)
        records[slot] = nil
        freeSlots.append(slot)
        return true
    }

    /// Evaluates fixes in order; the events they cause, in order (for one fix, by region identifier).
    public mutating func evaluate(_ locations: [Location]) -> [RegionEvent] {
        var events: [RegionEvent] = []
        for location in locations { evaluate(location, into: &events) }
        return events
    }

    /// Evaluates one fix; the events it causes, by region identifier.
    public mutating func evaluate(_ location: Location) -> [RegionEvent] {
        var events: [RegionEvent] = []
        evaluate(location, into: &events)
        return events
    }

    private mutating func evaluate(_ location: Location, into events: inout [RegionEvent]) {
        guard !slots.isEmpty, location.hasValidCoordinate else { return }
        let accuracy = location.horizontalAccuracy.flatMap { $0.isFinite && $0 >= 0 ? $0 : nil } ?? 0
        guard accuracy <= configuration.accuracyLimit else { return }
        if let last = lastFixTime, location.timestamp <= last, last.timeIntervalSince(location.timestamp) < Self.lateFixWindow { return }
        lastFixTime = location.timestamp
        var candidates = inside.union(large).union(unswept)
        unswept.removeAll()
        if let near = cells[Self.cell(latitude: location.latitude, longitude: location.longitude)] { candidates.formUnion(near) }
        let first = events.count
        for slot in candidates {
            guard var record = records[slot] else { continue }
            Self.step(&record, location, accuracy: accuracy, confirmations: configuration.exitConfirmations, into: &events)
            records[slot] = record
            if record.state == .inside { inside.insert(slot) } else { inside.remove(slot) }
        }
        if events.count - first > 1 { events[first...].sort { $0.region < $1.region } }
    }

    /// One region's response to one fix.
    private static func step(
        _ record: inout RegionRecord, _ location: Location, accuracy: Double, confirmations: Int, into events: inout [RegionEvent]
    ) {
        let region = record.region
        let distance = region.distance(to: location)
        let isInside = distance <= region.radius
        let isClearlyOutside = distance - accuracy > region.radius + region.exitMargin
        switch record.state {
        case .unknown, .outside:
            if isInside {
                record.state = .inside
                record.exitVotes = 0
                record.enteredAt = location.timestamp
                record.dwelt = false
                events.append(RegionEvent(region: region.identifier, kind: .enter, location: location))
                // A dwell of 0 is met at the entering fix itself.
                dwellIfDue(&record, location, into: &events)
            } else if isClearlyOutside {
                record.state = .outside
            }
        case .inside:
            if isClearlyOutside {
                record.exitVotes += 1
                guard record.exitVotes >= confirmations else { return }
                record.state = .outside
                record.exitVotes = 0
                record.enteredAt = nil
                events.append(RegionEvent(region: region.identifier, kind: .exit, location: location))
                return
            }
            record.exitVotes = 0
            // An assumed inside state has no start: the stay is counted from its first fix.
            if record.enteredAt == nil { record.enteredAt = location.timestamp }
            dwellIfDue(&record, location, into: &events)
        }
    }

    /// The stay's dwell event, once, when it has lasted the loitering delay at `location`.
    private static func dwellIfDue(_ record: inout RegionRecord, _ location: Location, into events: inout [RegionEvent]) {
        guard !record.dwelt, let delay = record.region.loiteringDelay, let start = record.enteredAt,
            location.timestamp.timeIntervalSince(start) >= delay.seconds
        else { return }
        record.dwelt = true
        events.append(RegionEvent(region: record.region.identifier, kind: .dwell, location: location))
    }

    private mutating func insert(_ record: RegionRecord) {
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            records[slot] = record
        } else {
            slot = records.count
            records.append(record)
        }
        slots[record.region.identifier] = slot
        if let covered = Self.cells(of: record.region, reach: reach(of: record.region)) {
            for cell in covered { cells[cell, default: []].append(slot) }
        } else {
            large.insert(slot)
        }
        if record.state == .inside { inside.insert(slot) }
        unswept.insert(slot)
    }

    /// How far from the centre a fix may be and still change the region's state or count towards its
    /// exit: beyond it, every admitted fix is clearly outside.
    private func reach(of region: CircularRegion) -> Double {
        region.radius + region.exitMargin + configuration.accuracyLimit + 1
    }

    /// The grid cell of a coordinate: 1° × 1°.
    static func cell(latitude: Double, longitude: Double) -> Int {
        let row = min(179, max(0, Int((latitude + 90).rounded(.down))))
        let column = min(359, max(0, Int((longitude + 180).rounded(.down))))
        return row * 360 + column
    }

    /// The cells a circle of `reach` metres around the region's centre touches, or `nil` when that is more
    /// than ``maximumCells`` (or the circle holds a pole).
    static func cells(of region: CircularRegion, reach: Double) -> [Int]? {
        let latitudeSpan = reach / metresPerDegree
        let south = region.latitude - latitudeSpan, north = region.latitude + latitudeSpan
        guard south > -90, north < 90 else { return nil }
        // The widest parallel of the box decides its width in longitude.
        let widest = max(abs(south), abs(north)) * .pi / 180
        let longitudeSpan = latitudeSpan / max(cos(widest), 1e-9)
        guard longitudeSpan < 180 else { return nil }
        let rows = Int((south + 90).rounded(.down))...Int((north + 90).rounded(.down))
        let firstColumn = Int((region.longitude - longitudeSpan + 180).rounded(.down))
        let lastColumn = Int((region.longitude + longitudeSpan + 180).rounded(.down))
        let columnCount = lastColumn - firstColumn + 1
        guard rows.count * columnCount <= maximumCells else { return nil }
        var result: [Int] = []
        result.reserveCapacity(rows.count * columnCount)
        for row in rows {
            for column in firstColumn...lastColumn {
                // Across the antimeridian the columns wrap around.
                let wrapped = ((column % 360) + 360) % 360
                result.append(min(179, max(0, row)) * 360 + wrapped)
            }
        }
        return result
    }
}
