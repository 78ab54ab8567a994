import LocationCore
import Testing

@Suite("Counts in messages")
struct CountedNounTests {
    @Test("one takes the singular, every other count the plural, with es after a sibilant")
    func pluralsFollowTheCount() {
        #expect(1.counted("held fix") == "1 held fix")
        #expect(0.counted("held fix") == "0 held fixes")
        #expect(2.counted("held fix") == "2 held fixes")
        #expect((-1).counted("byte") == "-1 byte")
        #expect(7.counted("byte") == "7 bytes")
        #expect(3.counted("batch") == "3 batches")
        #expect(2.counted("child", "children") == "2 children")
        #expect(1.counted("child", "children") == "1 child")
    }
}
