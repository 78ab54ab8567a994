import Foundation
import LocationCore
import LocationTesting
import Testing

@Suite("Compact held batch")
struct LocationBatchTests {
    @Test("stores and restores every field bit for bit, including absent ones")
    func lossless() {
        var batch = LocationBatch(capacity: 100_000)
        var originals = LocationFixtures.walk(count: 9000)
        originals[5].altitude = nil
        originals[6].source = "other"
        originals[7].satellitesUsed = nil
        originals[8].fixMode = .twoDimensional
        originals[9].isSimulated = true
        originals[10].speed = -0.0
        originals[11].course = 359.999_999_999_9
        originals[12].latitude = -89.999_999_999
        originals[13].hdop = 0.9
        originals[14].hdop = 1.1
        originals[14].vdop = 1.7
        originals[14].pdop = 2.02
        batch.append(contentsOf: originals)
        #expect(batch.count == originals.count)
        #expect(batch.peek() == originals)
        let (drained, dropped) = batch.drain()
        #expect(dropped == 0)
        #expect(drained == originals)
        #expect(batch.isEmpty)
    }

    @Test("a realistic fix takes well under 96 bytes")
    func compact() {
        var batch = LocationBatch(capacity: 100_000)
        batch.append(contentsOf: LocationFixtures.walk(count: LocationBatch.chunkSize * 3))
        let perFix = Double(batch.encodedBytes) / Double(batch.count)
        #expect(perFix < 96, "\(perFix) bytes per fix")
    }

    @Test("overflow drops the oldest and counts them")
    func overflow() {
        var batch = LocationBatch(capacity: 5000)
        let fixes = LocationFixtures.walk(count: 12_345)
        batch.append(contentsOf: fixes)
        #expect(batch.count == 5000)
        #expect(batch.droppedCount == 7345)
        let (drained, dropped) = batch.drain()
        #expect(dropped == 7345)
        #expect(drained == Array(fixes.suffix(5000)))
    }

    @Test("drain orders by fix time and removes duplicates of the same time and position")
    func orderAndDuplicates() {
        var batch = LocationBatch(capacity: 100)
        let a = LocationFixtures.walk(1), b = LocationFixtures.walk(2), c = LocationFixtures.walk(3)
        var sameTimeElsewhere = b
        sameTimeElsewhere.latitude += 0.001
        batch.append(contentsOf: [c, a, b, b, sameTimeElsewhere, a, c])
        let (drained, _) = batch.drain()
        #expect(drained == [a, b, sameTimeElsewhere, c])
    }
}
