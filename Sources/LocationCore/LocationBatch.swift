import Foundation

/// A bounded, compact, lossless store of the fixes held while the app is suspended.
///
/// A `Location` occupies over 200 bytes in an array; a batch stores the same values in a small
/// fraction of that. Fixes are kept in chunks of ``chunkSize``; within a chunk each number is stored as
/// the XOR of its bit pattern with the same field of the previous fix, minus the leading zero bytes, so
/// values that change little between fixes (coordinates, times, unchanged accuracies) cost a few bytes
/// and absent values cost none. Decoding restores every bit exactly.
///
/// When more than ``capacity`` fixes are appended the oldest are dropped and counted in
/// ``droppedCount``, never silently.
package struct LocationBatch: Sendable {
    /// The most fixes held at once.
    package let capacity: Int
    /// How many fixes one chunk holds; a full chunk is trimmed to its exact size.
    package static let chunkSize = 4096

    private struct Chunk: Sendable {
        var bytes: [UInt8] = []
        var count = 0
        var previous = FieldBits.initial
        var previousMeta = Meta.initial
    }

    private var chunks: [Chunk] = []
    /// Fixes at the front of the first chunk that were dropped by overflow.
    private var skippedInFirstChunk = 0
    private var sources: [String] = []
    private var sourceIndex: [String: Int] = [:]

    /// How many fixes are held.
    package private(set) var count = 0
    /// How many fixes were dropped for lack of room since the batch was last drained.
    package private(set) var droppedCount = 0

    /// Creates an empty batch that holds at most `capacity` fixes (at least 1).
    package init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Whether no fix is held.
    package var isEmpty: Bool { count == 0 }

    /// Bytes used by the encoded fixes (not counting the small per-chunk and per-source overhead).
    package var encodedBytes: Int { chunks.reduce(0) { $0 + $1.bytes.capacity } }

    /// Holds a fix; drops the oldest if the batch is full.
    package mutating func append(_ location: Location) {
        if chunks.isEmpty || chunks[chunks.count - 1].count == Self.chunkSize {
            if !chunks.isEmpty {
                // Trim the finished chunk: growth by doubling may have left up to half of it unused.
                let last = chunks.count - 1
                chunks[last].bytes = chunks[last].bytes.withUnsafeBufferPointer { Array($0) }
            }
            var chunk = Chunk()
            chunk.bytes.reserveCapacity(Self.chunkSize * 48)
            chunks.append(chunk)
        }
        var sourceID = 0
        if let source = location.source { sourceID = intern(source) }
        let last = chunks.count - 1
        Self.encode(location, sourceID: sourceID, into: &chunks[last])
        count += 1
        if count > capacity { dropOldest() }
    }

    /// Holds every fix of a sequence, in order.
    package mutating func append(contentsOf locations: some Sequence<Location>) {
        for location in locations { append(location) }
    }

    /// Removes and returns the held fixes oldest first (by fix time, stable), without duplicates
    /// (same fix time and coordinate), together with the number dropped by overflow.
    package mutating func drain() -> (locations: [Location], dropped: Int) {
        var result = decodeAll()
        let dropped = droppedCount
        self = LocationBatch(capacity: capacity)
        Self.sortAndRemoveDuplicates(&result)
        return (result, dropped)
    }

    /// The held fixes in arrival order, without removing them.
    package func peek() -> [Location] {
        decodeAll()
    }

    // MARK: - Encoding

    /// Bytes holding the 4-bit byte counts of the fields, two to a byte.
    private static let lengthBytes = (FieldBits.count + 1) / 2

    /// Sentinel bit pattern for an absent value: a NaN, which a `Location` never holds.
    private static let absent: UInt64 = 0x7FF8_0000_0000_0BAD

    private struct FieldBits: Sendable {
        var values: (
            UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
            UInt64, UInt64
        )
        static let count = 15
        static let initial = FieldBits(
            values: (0, 0, 0, absent, absent, absent, absent, absent, absent, absent, absent, absent, absent, absent, absent))

        init(
            values: (
                UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                UInt64, UInt64
            )
        ) {
            self.values = values
        }

        init(_ location: Location) {
            func bits(_ value: Double?) -> UInt64 { value.map(\.bitPattern) ?? LocationBatch.absent }
            values = (
                location.latitude.bitPattern, location.longitude.bitPattern,
                location.timestamp.timeIntervalSinceReferenceDate.bitPattern,
                bits(location.altitude), bits(location.ellipsoidalAltitude),
                bits(location.horizontalAccuracy), bits(location.verticalAccuracy),
                bits(location.speed), bits(location.speedAccuracy),
                bits(location.course), bits(location.courseAccuracy), bits(location.climb),
                bits(location.hdop), bits(location.vdop), bits(location.pdop)
            )
        }

        subscript(index: Int) -> UInt64 {
            get {
                withUnsafeBytes(of: values) { $0.load(fromByteOffset: index * 8, as: UInt64.self) }
            }
            set {
                withUnsafeMutableBytes(of: &values) { $0.storeBytes(of: newValue, toByteOffset: index * 8, as: UInt64.self) }
            }
        }
    }

    private struct Meta: Sendable, Equatable {
        var satellites: Int?
        var sourceID: Int
        var correction: CorrectionStatus?
        var visible: Int?
        static let initial = Meta(satellites: nil, sourceID: 0, correction: nil, visible: nil)
    }

    private static func encode(_ location: Location, sourceID: Int, into chunk: inout Chunk) {
        let current = FieldBits(location)
        var xors = FieldBits.initial
        var lengths: (UInt64) = 0
        for index in 0..<FieldBits.count {
            let x = current[index] ^ chunk.previous[index]
            xors[index] = x
            let length = (64 - x.leadingZeroBitCount + 7) / 8
            lengths |= UInt64(length) << (UInt64(index) * 4)
        }
        for byte in 0..<Self.lengthBytes { chunk.bytes.append(UInt8(truncatingIfNeeded: lengths >> (UInt64(byte) * 8))) }
        for index in 0..<FieldBits.count {
            var x = xors[index]
            let length = Int((lengths >> (UInt64(index) * 4)) & 0xF)
            for _ in 0..<length {
                chunk.bytes.append(UInt8(truncatingIfNeeded: x))
                x >>= 8
            }
        }
        let meta = Meta(
            satellites: location.satellitesUsed, sourceID: sourceID, correction: location.correctionStatus,
            visible: location.satellitesVisible)
        var flags: UInt8
        switch location.fixMode {
        case nil: flags = 0
        case .twoDimensional: flags = 1
        case .threeDimensional: flags = 2
        }
        if location.isSimulated { flags |= 0x04 }
        let satellitesChanged = meta.satellites != chunk.previousMeta.satellites
        let sourceChanged = meta.sourceID != chunk.previousMeta.sourceID
        if satellitesChanged { flags |= 0x08 }
        if sourceChanged { flags |= 0x10 }
        // Correction status and satellites in view change rarely: like the two above they cost one flag bit
        // per fix and their value only when it differs from the previous fix's.
        let correctionChanged = meta.correction != chunk.previousMeta.correction
        let visibleChanged = meta.visible != chunk.previousMeta.visible
        if correctionChanged { flags |= 0x20 }
        if visibleChanged { flags |= 0x40 }
        chunk.bytes.append(flags)
        if satellitesChanged { appendVarint(meta.satellites.map { UInt64(max(0, $0)) + 1 } ?? 0, to: &chunk.bytes) }
        if sourceChanged { appendVarint(UInt64(meta.sourceID), to: &chunk.bytes) }
        if correctionChanged { chunk.bytes.append(meta.correction?.code ?? 0) }
        if visibleChanged { appendVarint(meta.visible.map { UInt64(max(0, $0)) + 1 } ?? 0, to: &chunk.bytes) }
        chunk.previous = current
        chunk.previousMeta = meta
        chunk.count += 1
    }

    private func decodeAll() -> [Location] {
        var result: [Location] = []
        result.reserveCapacity(count)
        for (chunkIndex, chunk) in chunks.enumerated() {
            let skip = chunkIndex == 0 ? skippedInFirstChunk : 0
            chunk.bytes.withUnsafeBufferPointer { bytes in
                var offset = 0
                var previous = FieldBits.initial
                var meta = Meta.initial
                for index in 0..<chunk.count {
                    let location = Self.decode(bytes, &offset, &previous, &meta, sources)
                    if index >= skip { result.append(location) }
                }
            }
        }
        return result
    }

    private static func decode(
        _ bytes: UnsafeBufferPointer<UInt8>, _ offset: inout Int, _ previous: inout FieldBits, _ meta: inout Meta,
        _ sources: [String]
    ) -> Location {
        var lengths: UInt64 = 0
        for byte in 0..<Self.lengthBytes { lengths |= UInt64(bytes[offset + byte]) << (UInt64(byte) * 8) }
        offset += Self.lengthBytes
        for index in 0..<FieldBits.count {
            let length = Int((lengths >> (UInt64(index) * 4)) & 0xF)
            var x: UInt64 = 0
            for byte in 0..<length { x |= UInt64(bytes[offset + byte]) << (UInt64(byte) * 8) }
            offset += length
            previous[index] ^= x
        }
        let flags = bytes[offset]
        offset += 1
        if flags & 0x08 != 0 {
            let value = readVarint(bytes, &offset)
            meta.satellites = value == 0 ? nil : Int(value - 1)
        }
        if flags & 0x10 != 0 { meta.sourceID = Int(readVarint(bytes, &offset)) }
        if flags & 0x20 != 0 {
            meta.correction = CorrectionStatus(code: bytes[offset])
            offset += 1
        }
        if flags & 0x40 != 0 {
            let value = readVarint(bytes, &offset)
            meta.visible = value == 0 ? nil : Int(value - 1)
        }
        func value(_ index: Int) -> Double? {
            let bits = previous[index]
            return bits == absent ? nil : Double(bitPattern: bits)
        }
        let fixMode: FixMode? =
            switch flags & 0x03 {
            case 1: .twoDimensional
            case 2: .threeDimensional
            default: nil
            }
        return Location(
            latitude: Double(bitPattern: previous[0]), longitude: Double(bitPattern: previous[1]),
            altitude: value(3), ellipsoidalAltitude: value(4),
            horizontalAccuracy: value(5), verticalAccuracy: value(6),
            speed: value(7), speedAccuracy: value(8), course: value(9), courseAccuracy: value(10), climb: value(11),
            timestamp: Date(timeIntervalSinceReferenceDate: Double(bitPattern: previous[2])),
            fixMode: fixMode, correctionStatus: meta.correction, satellitesUsed: meta.satellites,
            satellitesVisible: meta.visible,
            source: meta.sourceID == 0 ? nil : sources[meta.sourceID - 1],
            isSimulated: flags & 0x04 != 0, hdop: value(12), vdop: value(13), pdop: value(14))
    }

    private static func appendVarint(_ value: UInt64, to bytes: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    private static func readVarint(_ bytes: UnsafeBufferPointer<UInt8>, _ offset: inout Int) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = bytes[offset]
            offset += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
    }

    private mutating func intern(_ source: String) -> Int {
        if let id = sourceIndex[source] { return id }
        sources.append(source)
        sourceIndex[source] = sources.count
        return sources.count
    }

    private mutating func dropOldest() {
        count -= 1
        droppedCount += 1
        skippedInFirstChunk += 1
        if skippedInFirstChunk == chunks[0].count {
            chunks.removeFirst()
            skippedInFirstChunk = 0
        }
    }

    /// Orders by fix time (stable, so equal times keep arrival order) and removes duplicates, which can
    /// only sit among fixes with equal times.
    static func sortAndRemoveDuplicates(_ locations: inout [Location]) {
        var isSorted = true
        for index in locations.indices.dropFirst() where locations[index].timestamp < locations[index - 1].timestamp {
            isSorted = false
            break
        }
        if !isSorted {
            locations = locations.enumerated()
                .sorted { ($0.element.timestamp, $0.offset) < ($1.element.timestamp, $1.offset) }
                .map(\.element)
        }
        var kept = 0
        var runStart = 0
        for index in locations.indices {
            let candidate = locations[index]
            if kept > 0, locations[kept - 1].timestamp != candidate.timestamp { runStart = kept }
            var duplicate = false
            for earlier in runStart..<kept where locations[earlier].isDuplicate(of: candidate) {
                duplicate = true
                break
            }
            if !duplicate {
                if kept != index { locations[kept] = candidate }  // most batches hold no duplicate: no copy
                kept += 1
            }
        }
        locations.removeLast(locations.count - kept)
    }
}
