import Foundation
import LocationCore
import LocationTesting
import Testing

/// The correction status and the satellites in view survive every place a `Location` is stored.
@Suite("Fix quality in storage")
struct FixQualityStorageTests {
    /// Walk fixes carrying every correction status (and none), and changing counts of satellites in view.
    static func qualityFixes(count: Int = 300) -> [Location] {
        let statuses: [CorrectionStatus?] = [nil] + CorrectionStatus.allCases
        return LocationFixtures.walk(count: count).enumerated().map { index, fix in
            var fix = fix
            fix.correctionStatus = statuses[(index / 7) % statuses.count]
            fix.satellitesVisible = index % 11 == 0 ? nil : 12 + index % 5
            if index == 5 { fix.satellitesVisible = Int(UInt32.max) }
            if index == 6 { fix.satellitesVisible = 0 }
            return fix
        }
    }

    @Test("the journal reads back every correction status and count of satellites in view after reopening")
    func journalRoundTrip() throws {
        let directory = TemporaryDirectory()
        let fixes = Self.qualityFixes()
        let path = try directory.journal(holding: fixes)
        let (journal, contents) = try LocationJournal.open(path: path)
        journal.close()
        #expect(contents.problem == nil)
        #expect(contents.locations == fixes)
    }

    @Test("a fix without the new fields is written exactly in the old layout, mask bit 15 clear")
    func journalOldLayoutUnchanged() {
        let fix = LocationFixtures.walk(3)
        var written: [UInt8] = []
        LocationJournal.encodeRecord(fix, into: &written)
        #expect(written == Self.versionOneRecord(fix))
        #expect(written[5] & 0x80 == 0)
        var withStatus = fix
        withStatus.correctionStatus = .rtkFixed
        var extended: [UInt8] = []
        LocationJournal.encodeRecord(withStatus, into: &extended)
        #expect(extended[5] & 0x80 != 0)
    }

    @Test("records written in the version-1 layout before the extension existed still read")
    func journalReadsOldRecords() {
        let fixes = LocationFixtures.walk(count: 20)
        var bytes = Array("LOCJRNL1".utf8)
        for fix in fixes { bytes += Self.versionOneRecord(fix) }
        let decoded = LocationJournal.decode(Data(bytes), path: "old.journal")
        #expect(decoded.problem == nil)
        #expect(decoded.locations == fixes)
        #expect(decoded.locations.allSatisfy { $0.correctionStatus == nil && $0.satellitesVisible == nil })
    }

    @Test("an extension with an unknown bit, an unknown status code or cut short is skipped as malformed, never trusted")
    func journalRefusesHostileExtensions() {
        var fix = LocationFixtures.walk(1)
        fix.correctionStatus = .dgps
        fix.satellitesVisible = 14
        var good: [UInt8] = []
        LocationJournal.encodeRecord(fix, into: &good)
        let payload = Array(good[4..<(good.count - 4)])
        // The extension is the payload's last 6 bytes: mask, status code, u32 count.
        let extensionStart = payload.count - 6
        var variants: [[UInt8]] = []
        for mask: UInt8 in [0x04, 0x80, 0xFF, 0x00] {
            var changed = payload
            changed[extensionStart] = mask
            variants.append(changed)
        }
        for code: UInt8 in [0, 10, 200, 255] {
            var changed = payload
            changed[extensionStart + 1] = code
            variants.append(changed)
        }
        variants.append(Array(payload.dropLast(2)))  // cut inside the count
        variants.append(Array(payload.dropLast(6)))  // bit 15 set, no extension at all
        variants.append(payload + [0])  // a byte after the extension
        let before = LocationFixtures.walk(0)
        let after = LocationFixtures.walk(2)
        for variant in variants {
            var bytes = Array("LOCJRNL1".utf8)
            LocationJournal.encodeRecord(before, into: &bytes)
            bytes += Self.record(payload: variant)
            LocationJournal.encodeRecord(after, into: &bytes)
            let decoded = LocationJournal.decode(Data(bytes), path: "hostile.journal")
            #expect(decoded.locations == [before, after], "variant \(variant.suffix(6))")
            #expect(decoded.problem != nil)
        }
        // The largest count a u32 holds reads back as it is.
        fix.satellitesVisible = Int(UInt32.max)
        var huge = Array("LOCJRNL1".utf8)
        LocationJournal.encodeRecord(fix, into: &huge)
        #expect(LocationJournal.decode(Data(huge), path: "huge.journal").locations == [fix])
    }

    @Test("the held batch restores every correction status and count of satellites in view bit for bit")
    func batchRoundTrip() {
        var batch = LocationBatch(capacity: 100_000)
        let fixes = Self.qualityFixes(count: LocationBatch.chunkSize + 500)
        batch.append(contentsOf: fixes)
        #expect(batch.peek() == fixes)
        #expect(batch.drain().locations == fixes)
    }

    @Test("an RTK fix with satellites in view costs the batch about one byte more than a plain one")
    func batchStaysCompact() {
        let plain = LocationFixtures.walk(count: LocationBatch.chunkSize * 2)
        let rich = plain.map { fix in
            var fix = fix
            fix.correctionStatus = .rtkFixed
            fix.satellitesVisible = 17
            return fix
        }
        var plainBatch = LocationBatch(capacity: 100_000)
        plainBatch.append(contentsOf: plain)
        var richBatch = LocationBatch(capacity: 100_000)
        richBatch.append(contentsOf: rich)
        let extra = Double(richBatch.encodedBytes - plainBatch.encodedBytes) / Double(rich.count)
        #expect(extra < 0.01, "\(extra) extra bytes per fix when status and count do not change")
        #expect(Double(richBatch.encodedBytes) / Double(rich.count) < 96)
    }

    @Test("JSON keeps every correction status and satellites in view; an unknown status or a negative count is left out")
    func codable() throws {
        for fix in Self.qualityFixes(count: 80) {
            let decoded = try JSONDecoder().decode(Location.self, from: JSONEncoder().encode(fix))
            #expect(decoded == fix)
        }
        let hostile = Data(
            #"{"latitude":1,"longitude":2,"timestamp":"2024-01-01T00:00:00Z","correctionStatus":"warp-drive","satellitesVisible":-3,"satellitesUsed":-1}"#
                .utf8)
        let decoded = try JSONDecoder().decode(Location.self, from: hostile)
        #expect(decoded.correctionStatus == nil)
        #expect(decoded.satellitesVisible == nil)
        #expect(decoded.satellitesUsed == nil)
        let wrongType = Data(#"{"latitude":1,"longitude":2,"timestamp":"2024-01-01T00:00:00Z","correctionStatus":3}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Location.self, from: wrongType) }
        let huge = Data(#"{"latitude":1,"longitude":2,"timestamp":"2024-01-01T00:00:00Z","satellitesVisible":1e300}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Location.self, from: huge) }
    }

    @Test("every correction status has a distinct storage code that maps back, and unknown codes map to nil")
    func codes() {
        let codes = CorrectionStatus.allCases.map(\.code)
        #expect(Set(codes).count == codes.count)
        for status in CorrectionStatus.allCases { #expect(CorrectionStatus(code: status.code) == status) }
        for code: UInt8 in [0, 10, 255] { #expect(CorrectionStatus(code: code) == nil) }
    }

    @Test("an impossible count of satellites in view (a GPX file's 99999, a negative one) is left out and named by the value check")
    func valueCheck() {
        for count in [-1, 1_001, 99_999, Int.max] {
            var fix = LocationFixtures.walk(0)
            fix.satellitesVisible = count
            fix.correctionStatus = .rtkFloat
            guard case .leftOut(let checked, let problems) = LocationValueCheck.check(fix) else {
                Issue.record("satellitesVisible \(count) passed the check")
                continue
            }
            #expect(checked.satellitesVisible == nil)
            #expect(checked.correctionStatus == .rtkFloat)
            #expect(problems == [.init(field: "satellitesVisible", description: "satellitesVisible \(count) (outside 0…1000)")])
        }
        var fine = LocationFixtures.walk(0)
        fine.satellitesVisible = 1_000
        #expect(LocationValueCheck.check(fine) == .valid)
        #expect(CorrectionStatus.allCases.filter(\.isDifferential) == [.dgps, .rtkFixed, .rtkFloat])
    }

    // MARK: - The version-1 record layout, written out by hand as LocationJournal's header documents it

    static func versionOneRecord(_ location: Location) -> [UInt8] {
        var payload: [UInt8] = []
        func put<T: FixedWidthInteger>(_ value: T) {
            withUnsafeBytes(of: value.littleEndian) { payload.append(contentsOf: $0) }
        }
        let optionals = [
            location.altitude, location.ellipsoidalAltitude, location.horizontalAccuracy, location.verticalAccuracy,
            location.speed, location.speedAccuracy, location.course, location.courseAccuracy, location.climb,
        ]
        let dilutions = [location.hdop, location.vdop, location.pdop]
        var mask: UInt16 = 0
        for (bit, value) in optionals.enumerated() where value != nil { mask |= 1 << bit }
        if location.satellitesUsed != nil { mask |= 1 << 9 }
        if location.fixMode != nil { mask |= 1 << 10 }
        if location.source != nil { mask |= 1 << 11 }
        for (bit, value) in dilutions.enumerated() where value != nil { mask |= 1 << (12 + bit) }
        put(mask)
        payload.append((location.isSimulated ? 1 : 0) | (location.fixMode == .threeDimensional ? 2 : 0))
        put(location.latitude.bitPattern)
        put(location.longitude.bitPattern)
        put(location.timestamp.timeIntervalSinceReferenceDate.bitPattern)
        for value in optionals { if let value { put(value.bitPattern) } }
        if let satellites = location.satellitesUsed { put(UInt32(satellites)) }
        if let source = location.source {
            put(UInt16(source.utf8.count))
            payload += Array(source.utf8)
        }
        for value in dilutions { if let value { put(value.bitPattern) } }
        return record(payload: payload)
    }

    static func record(payload: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = []
        withUnsafeBytes(of: UInt32(payload.count).littleEndian) { bytes.append(contentsOf: $0) }
        bytes += payload
        withUnsafeBytes(of: crc32(payload).littleEndian) { bytes.append(contentsOf: $0) }
        return bytes
    }

    /// CRC-32 (IEEE 802.3, reflected), bit by bit.
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
        }
        return ~crc
    }
}
