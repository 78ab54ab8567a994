import LocationControl
import Testing

@Suite("A watching client whose consumer stops taking lines")
struct WatchRelayTests {
    static func line(_ number: Int) -> [UInt8] { Array(#"{"type":"n","n":\#(number)}"#.utf8) }

    @Test("memory is bounded by the buffer; what did not fit is counted and reported before the next line")
    func missedLinesAreCountedAndReported() async throws {
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: [UInt8].self, throwing: (any Error).self, bufferingPolicy: .bufferingOldest(4))
        var relay = WatchRelay()
        for number in 1...10 {
            let open = relay.offer(Self.line(number), to: continuation)
            #expect(open)
        }
        #expect(relay.missed == 6)
        var iterator = stream.makeAsyncIterator()
        var taken: [[UInt8]] = []
        for _ in 0..<4 { taken.append(try #require(try await iterator.next())) }
        #expect(taken == (1...4).map(Self.line))
        let open = relay.offer(Self.line(11), to: continuation)
        #expect(open)
        relay.finish(throwing: CancellationError(), continuation)
        let report = try #require(try await iterator.next())
        #expect(String(decoding: report, as: UTF8.self).contains(#""code":"consumer-overrun","message":"this client missed 6 event lines"#))
        #expect(try await iterator.next() == Self.line(11))
        do {
            _ = try await iterator.next()
            Issue.record("the stream did not end with the error")
        } catch {
            #expect(error is CancellationError)
        }
    }

    @Test("lines still missed when the stream ends are the error it ends with, if there is no room to say it")
    func missedAtTheEndEndTheStream() async throws {
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: [UInt8].self, throwing: (any Error).self, bufferingPolicy: .bufferingOldest(2))
        var relay = WatchRelay()
        for number in 1...5 { _ = relay.offer(Self.line(number), to: continuation) }
        relay.finish(throwing: CancellationError(), continuation)
        var iterator = stream.makeAsyncIterator()
        #expect(try await iterator.next() == Self.line(1))
        #expect(try await iterator.next() == Self.line(2))
        do {
            _ = try await iterator.next()
            Issue.record("the stream did not end with the error")
        } catch {
            #expect((error as? ControlError)?.code == .watcherLagged)
            #expect((error as? ControlError)?.message.contains("missed 3 event lines") == true)
        }
    }
}
