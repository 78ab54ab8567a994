import LocationCore
import LocationControl

/// The manager's held batch, as the benchmarks measure it: how many bytes a held fix costs.
public struct HeldBatchProbe: Sendable {
    private var batch: LocationBatch

    /// An empty batch with room for `capacity` fixes.
    public init(capacity: Int) { batch = LocationBatch(capacity: capacity) }

    /// Holds one more fix.
    public mutating func append(_ location: Location) { batch.append(location) }

    /// The fixes held.
    public var count: Int { batch.count }

    /// The bytes its encoded fixes take.
    public var encodedBytes: Int { batch.encodedBytes }
}

/// The journal of held fixes, as the benchmarks fill and time it.
public final class JournalProbe {
    private let journal: LocationJournal

    /// Opens (creating if needed) the journal at `path`.
    public init(path: String) throws(LocationError) {
        journal = try LocationJournal.open(path: path).journal
    }

    /// Appends one fix: one write.
    public func append(_ location: Location) throws(LocationError) { try journal.append(location) }

    /// Appends the fixes in one write.
    public func append(contentsOf locations: [Location]) throws(LocationError) { try journal.append(contentsOf: locations) }

    /// Syncs and closes the file.
    public func close() { journal.close() }
}

/// A held batch on the control socket, as the benchmarks time it: its line in each encoding, and reading it
/// back as a client does.
public enum HeldBatchLineProbe {
    /// The batch line of `locations` as JSON objects, or as journal records (`records`).
    public static func line(_ locations: [Location], records: Bool) -> [UInt8] {
        guard records else { return JSONLineEncoder.line(.locations(locations, .held(.foreground)), batchID: "bench.1") }
        var encoded: [UInt8] = []
        JSONLineEncoder.appendRecords(of: locations, to: &encoded)
        return JSONLineEncoder.batchLine(count: locations.count, reason: "foreground", id: "bench.1", records: encoded)
    }

    /// How many fixes a client reads from the line (without its newline); 0 when it reads none.
    public static func read(_ line: [UInt8]) -> Int {
        guard case .locations(let locations, _)? = try? LocationEventDecoder.frameIfKnown(line)?.event else { return 0 }
        return locations.count
    }
}
