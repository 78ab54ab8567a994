import Foundation
import LocationCore
import Testing

@testable import LocationControl

#if canImport(Glibc)
import Glibc
#endif

@Suite("Control server under load and with slow clients")
struct ControlLoadTests {
    /// A numbered event line of a fixed size.
    static func event(_ number: Int) -> [UInt8] {
        Array("{\"type\":\"tick\",\"n\":\(number),\"pad\":\"\(String(repeating: "p", count: 40))\"}\n".utf8)
    }

    static func number(in line: [UInt8]) -> Int? {
        guard let json = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any] else { return nil }
        return json["n"] as? Int
    }

    @Test(.timeLimit(.minutes(1)))
    func manyClientsComeAndGoWhileWatchersStream() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let server = try ControlServer(path: directory.socket(), handler: StubHandler().handler)
        defer { server.stop() }
        let path = server.path
        let watcherCount = 50, churnClients = 200, events = 300

        // 50 watchers, each collecting event numbers until the final event.
        typealias Watcher = (client: ControlClient, events: AsyncThrowingStream<[UInt8], any Error>)
        let watchers = try await withThrowingTaskGroup(of: Watcher.self) { group in
            for _ in 0..<watcherCount {
                group.addTask {
                    try await onThread {
                        let client = try ControlClient(path: path)
                        return (client, try client.watch())
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(server.watcherCount == watcherCount)

        async let received: [[Int]] = withThrowingTaskGroup(of: [Int].self) { group in
            for (_, stream) in watchers {
                group.addTask {
                    var numbers: [Int] = []
                    for try await line in stream {
                        guard let number = Self.number(in: line) else { continue }
                        if number < 0 { break }
                        numbers.append(number)
                    }
                    return numbers
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }

        // 200 clients at once, each connecting, asking, and disconnecting three times over.
        let churn = Task {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<churnClients {
                    group.addTask {
                        try await onThread {
                            var answered = 0
                            for round in 0..<3 {
                                let client = try ControlClient(path: path)
                                let reply = try client.request(round == 1 ? .state(set: nil) : .status)
                                if reply.text.hasPrefix("{\"ok\":true") { answered += 1 }
                            }
                            return answered
                        }
                    }
                }
                return try await group.reduce(0, +)
            }
        }
        for number in 0..<events {
            server.broadcast(Self.event(number))
            if number % 50 == 0 { await Task.yield() }
        }
        let answered = try await churn.value
        server.broadcast(Self.event(-1))

        #expect(answered == churnClients * 3)
        let all = try await received
        #expect(all.count == watcherCount)
        for numbers in all {
            #expect(numbers == Array(0..<events))
        }
        for watcher in watchers { watcher.client.close() }
        #expect(await waitUntil { server.connectionCount == 0 })
    }

    @Test(.timeLimit(.minutes(1)))
    func aWatcherThatNeverReadsMissesCountedEventsAndDoesNotBlockOthers() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let configuration = ControlServerConfiguration(maxOutputBuffer: 64 * 1024)
        let stub = StubHandler()
        let server = try ControlServer(path: directory.socket(), configuration: configuration, handler: stub.handler)
        defer { server.stop() }
        let path = server.path

        // The slow watcher: a raw socket that asks to watch and then reads nothing.
        let slow = try await onThread { () -> RawSocket in
            let socket = try RawSocket(path: path)
            socket.write("{\"command\":\"watch\"}\n")
            return socket
        }
        let fast = try await onThread { try ControlClient(path: path).watch() }
        #expect(await waitUntil { server.watcherCount == 2 })

        // Broadcast in rounds and let the fast watcher read each round fully before the next: it never lags,
        // while the slow one's socket and output buffer fill up.
        var iterator = fast.makeAsyncIterator()
        _ = try await iterator.next()  // hello
        let rounds = 40, perRound = 500
        var fastNumbers: [Int] = []
        var queuedToSlow = 0
        for round in 0..<rounds {
            for index in 0..<perRound {
                let number = round * perRound + index
                queuedToSlow += server.broadcast(Self.event(number)) == 2 ? 1 : 0
            }
            while fastNumbers.count < (round + 1) * perRound {
                guard let line = try await iterator.next(), let number = Self.number(in: line) else {
                    Issue.record("fast watcher's stream ended")
                    return
                }
                fastNumbers.append(number)
            }
        }
        let total = rounds * perRound
        #expect(fastNumbers == Array(0..<total))
        #expect(queuedToSlow < total, "the slow watcher should have missed events")

        // The slow watcher catches up: what it missed is reported once, before the next event, and nothing
        // is lost silently.
        let slowLines = try await onThread { () -> [String] in
            var lines: [String] = []
            var pending: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65536)
            var sentFinal = false
            while true {
                let count = chunk.withUnsafeMutableBytes { recv(slow.fd, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { break }
                pending += chunk[0..<count]
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    lines.append(String(decoding: pending[..<newline], as: UTF8.self))
                    pending.removeSubrange(...newline)
                }
                if !sentFinal, lines.contains(where: { $0.contains("watcher-lagged") }) {
                    sentFinal = true
                    server.broadcast(Self.event(-1))
                }
                if lines.last.map({ $0.contains("\"n\":-1") }) == true { break }
            }
            return lines
        }
        #expect(slowLines.first == #"{"ok":true,"watching":true}"#)
        #expect(slowLines.dropFirst().first == #"{"type":"hello"}"#)
        let laggedIndex = try #require(slowLines.firstIndex { $0.contains("watcher-lagged") })
        let lagged = try object(slowLines[laggedIndex])
        #expect(lagged["type"] as? String == "error")
        #expect(lagged["code"] as? String == "watcher-lagged")
        let message = try #require(lagged["message"] as? String)
        let missed = try #require(Int(message.split(separator: " ")[1]))
        #expect(message == "missed \(missed) events")

        let delivered = slowLines[2..<laggedIndex].compactMap { Self.number(in: Array($0.utf8)) }
        #expect(delivered == Array(0..<delivered.count), "delivered events are a gap-free prefix")
        #expect(delivered.count == queuedToSlow)
        #expect(delivered.count + missed == total)
        #expect(slowLines[(laggedIndex + 1)...].map { Self.number(in: Array($0.utf8)) } == [-1])
    }

    @Test(.timeLimit(.minutes(1)))
    func aStalledClientIsDisconnectedAndAnIdleOneIsNot() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let configuration = ControlServerConfiguration(maxOutputBuffer: 16 * 1024, stallTimeout: .milliseconds(300))
        let handler = StubHandler()
        let server = try ControlServer(path: directory.socket(), configuration: configuration, handler: handler.handler)
        defer { server.stop() }
        let path = server.path

        let stalled = try RawSocket(path: path)
        stalled.write("{\"command\":\"watch\"}\n")
        #expect(await waitUntil { handler.watchers.value.count == 1 })
        let idle = try RawSocket(path: path)
        idle.write("{\"command\":\"watch\"}\n")
        #expect(await waitUntil { server.watcherCount == 2 })
        let stalledConnection = try #require(handler.watchers.value.first)

        // Fill the stalled watcher's socket and output buffer; the idle watcher has nothing pending.
        var sent = 0
        while stalledConnection.send(Self.event(sent)) { sent += 1 }
        #expect(sent > 100)
        #expect(await waitUntil(.seconds(10)) { server.connectionCount == 1 })
        #expect(!stalledConnection.isOpen)
        #expect(server.watcherCount == 1)
        // The idle watcher was never at risk: it is still served.
        #expect(server.broadcast(Self.event(1)) == 1)
        let lines = try await onThread { () -> [String] in
            idle.shutdownWrite()
            var all: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while !String(decoding: all, as: UTF8.self).contains("\"n\":1") {
                let count = chunk.withUnsafeMutableBytes { recv(idle.fd, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { break }
                all += chunk[0..<count]
            }
            return String(decoding: all, as: UTF8.self).split(separator: "\n").map(String.init)
        }
        #expect(lines.count == 3)
        _ = stalled
    }

    @Test(.timeLimit(.minutes(1)))
    func aClientPipeliningWithoutReadingIsHeldBackAndLosesNoReply() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let configuration = ControlServerConfiguration(maxOutputBuffer: 4096, maxPendingRequests: 4)
        let server = try ControlServer(path: directory.socket(), configuration: configuration) { request, _ in
            .success(["command": request.command])
        }
        defer { server.stop() }
        let socket = try RawSocket(path: server.path)
        let requests = 20_000

        // Write everything before reading anything: the server must stop reading rather than buffer replies.
        // The requests go out 100 at a time, counted, so that the test can see the writer run and then stall.
        let line = "{\"command\":\"status\"}\n"
        let chunk = 100
        let chunksSent = Locked(0)
        let written = Locked(false)
        let writer = Task {
            try await onThread {
                for _ in 0..<(requests / chunk) {
                    socket.write(String(repeating: line, count: chunk))
                    chunksSent.withLock { $0 += 1 }
                }
                socket.shutdownWrite()
                written.withLock { $0 = true }
            }
        }
        // Held back: 20,000 requests (420 KB) and their replies (620 KB) are more than the socket buffers
        // hold, so once the server stops reading the writer blocks, and what the server holds for this
        // client stays within its 4 KiB output bound (maxOutputBuffer: "the most bytes of unsent output
        // held for one connection") plus the replies to the requests it may have pending. A server that
        // read and buffered everything would let the writer finish and hold hundreds of KB.
        let reply = #"{"ok":true,"command":"status"}"#.utf8.count + 1
        // Until the writer has run and then stalled with replies held for it: some chunks sent, no more for a
        // while (20 looks, 10 ms apart, at the same count) and output waiting in the server. A writer can
        // also pause while a slow server (a sanitizer, a busy machine) is still reading and sending, so a
        // pause alone is not the end. What the server holds is checked at every look, not only at the end.
        let bound = configuration.maxOutputBuffer + configuration.maxPendingRequests * reply
        let deadline = ContinuousClock.now + .seconds(30)
        var stalledLooks = 0
        var lastCount = -1
        var held = 0
        var mostHeld = 0
        while !written.value, !(stalledLooks >= 20 && held > 0), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
            let count = chunksSent.value
            stalledLooks = count > 0 && count == lastCount ? stalledLooks + 1 : 0
            lastCount = count
            held = server.bufferedOutputBytes
            mostHeld = max(mostHeld, held)
        }
        #expect(!written.value, "the writer is blocked: the server stopped reading")
        #expect(stalledLooks >= 20 && held > 0, "the writer stalled with replies held: \(chunksSent.value) of \(requests / chunk) chunks sent, \(held) bytes held")
        #expect(chunksSent.value > 0 && chunksSent.value < requests / chunk, "\(chunksSent.value) chunks sent before it blocked")
        #expect(mostHeld <= bound, "at most \(mostHeld) bytes of replies held for the client that does not read")
        let lines = try await onThread { socket.readToEnd() }
        try await writer.value
        #expect(lines.count == requests)
        #expect(Set(lines) == [#"{"ok":true,"command":"status"}"#])
    }

    @Test func connectionsBeyondTheLimitAreRefusedWithAReason() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let configuration = ControlServerConfiguration(maxConnections: 3)
        let server = try ControlServer(path: directory.socket(), configuration: configuration, handler: StubHandler().handler)
        defer { server.stop() }
        let path = server.path

        // Three watchers: busy connections, none of which may be closed for a newcomer.
        let watchers = try await onThread { try (0..<3).map { _ in try ControlClient(path: path) } }
        var streams: [AsyncThrowingStream<[UInt8], any Error>] = []
        for client in watchers { streams.append(try await onThread { try client.watch() }) }
        #expect(await waitUntil { server.watcherCount == 3 })
        try await onThread {
            let extra = try ControlClient(path: path)
            let line = String(decoding: try extra.readLine(timeout: .seconds(5)), as: UTF8.self)
            #expect(try errorCode(line) == "too-many-connections")
            #expect {
                try extra.readLine(timeout: .seconds(5))
            } throws: { ($0 as? ControlError)?.code == .connectionClosed }
        }
        #expect(server.watcherCount == 3, "no watcher was dropped for the newcomer")
        // Once one leaves, a new client is served while the other two watchers stay; once it watches too,
        // every connection is busy again and the next newcomer is refused again.
        watchers[0].close()
        #expect(await waitUntil { server.connectionCount == 2 })
        let newcomer = try await onThread { try ControlClient(path: path) }
        #expect(try await onThread { try newcomer.request(.status) }.text.hasPrefix("{\"ok\":true"))
        #expect(server.connectionCount == 3)
        #expect(server.watcherCount == 2, "the two other watchers are still there")
        streams.append(try await onThread { try newcomer.watch() })
        #expect(await waitUntil { server.watcherCount == 3 })
        try await onThread {
            let another = try ControlClient(path: path)
            #expect(try errorCode(String(decoding: try another.readLine(timeout: .seconds(5)), as: UTF8.self)) == "too-many-connections")
        }
        withExtendedLifetime((watchers, streams, newcomer)) {}
    }

    @Test("watchers that never read cost at most the total output bound together; one that reads gets every event")
    func totalOutputIsBounded() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let total = 256 * 1024
        let configuration = ControlServerConfiguration(maxOutputBuffer: 1024 * 1024, maxTotalOutputBuffer: total)
        let server = try ControlServer(path: directory.socket(), configuration: configuration, handler: StubHandler().handler)
        defer { server.stop() }
        let path = server.path
        let stuck = try (0..<20).map { _ in try RawSocket(path: path) }
        for socket in stuck { socket.write("{\"command\":\"watch\"}\n") }
        let reader = try await onThread { try ControlClient(path: path) }
        let events = try await onThread { try reader.watch() }
        #expect(await waitUntil { server.watcherCount == 21 })
        let line = Array((#"{"type":"filler","x":""# + String(repeating: "x", count: 200) + #""}"#).utf8)
        var received = 0
        var iterator = events.makeAsyncIterator()
        _ = try await iterator.next()  // hello
        for _ in 0..<10_000 {
            _ = server.broadcast(line)
            if try await iterator.next() != nil { received += 1 }
        }
        // 20 × 2 MB was offered to the stuck watchers; what is held stays near the bound.
        #expect(server.bufferedOutputBytes <= total + 21 * (line.count + 1), "\(server.bufferedOutputBytes) bytes held")
        #expect(received == 10_000, "the watcher that reads misses nothing")
        withExtendedLifetime((stuck, reader)) {}
    }

    @Test(
        "clients that ask without reading cost at most the total output bound together, their replies included; a client that reads is still answered",
        .timeLimit(.minutes(1)))
    func repliesCountTowardTheTotalOutputBound() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let total = 256 * 1024
        let configuration = ControlServerConfiguration(maxOutputBuffer: 1024 * 1024, maxTotalOutputBuffer: total)
        let payload = String(repeating: "x", count: 8 * 1024)
        let answered = Locked(0)
        let server = try ControlServer(path: directory.socket(), configuration: configuration) { _, _ in
            answered.withLock { $0 += 1 }
            return .success(["payload": payload])
        }
        defer { server.stop() }
        let path = server.path
        // 40 clients each ask 400 times (3.2 MB of replies each) and never read. Without the total bound on
        // replies each would be answered up to its own 1 MiB: 40 MiB held.
        let clients = try (0..<40).map { _ in try RawSocket(path: path) }
        let requests = String(repeating: "{\"command\":\"status\"}\n", count: 400)
        for client in clients { client.write(requests) }
        #expect(await waitUntil(.seconds(20)) { server.bufferedOutputBytes >= total }, "the bound is reached")
        // Until the server has stopped answering them: 20 looks, 10 ms apart, at the same count.
        let deadline = ContinuousClock.now + .seconds(20)
        var still = 0, last = -1
        while still < 20, ContinuousClock.now < deadline {
            let now = answered.value
            still = now == last ? still + 1 : 0
            last = now
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(still >= 20, "the server stopped answering clients that do not read (\(answered.value) answers)")
        // Past the total no connection with output waiting is read: what is held is the total plus, for each
        // connection, the replies to what it had asked before the total was reached (at most maxPendingRequests).
        let reply = #"{"ok":true,"payload":""#.utf8.count + payload.utf8.count + 3
        let bound = total + clients.count * configuration.maxPendingRequests * reply
        #expect(
            server.bufferedOutputBytes <= bound,
            "\(server.bufferedOutputBytes) bytes held for \(clients.count) clients; the bound is \(bound)")
        let reader = try await onThread { try ControlClient(path: path) }
        let status = try await onThread { try reader.request(.status) }
        #expect(status.text.contains(payload), "a client that reads is answered")
        withExtendedLifetime(clients) {}
    }

    @Test("idle connections at the limit never lock a new client out: the oldest idle one is closed with a reason")
    func idleConnectionsMakeRoomForANewClient() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let configuration = ControlServerConfiguration(maxConnections: 3)
        let server = try ControlServer(path: directory.socket(), configuration: configuration, handler: StubHandler().handler)
        defer { server.stop() }
        let path = server.path
        try await onThread {
            let idle = try (0..<3).map { _ in try ControlClient(path: path) }
            for client in idle { _ = try client.request(.status) }
            // A fourth client is served at once.
            #expect(try ControlClient.request(.status, path: path).text.hasPrefix("{\"ok\":true"))
            // The oldest idle connection was the one closed, with a line saying why; the others still work.
            let line = String(decoding: try idle[0].readLine(timeout: .seconds(5)), as: UTF8.self)
            #expect(try errorCode(line) == "too-many-connections")
            #expect(line.contains("closed to make room for a new client"))
            for client in idle.dropFirst() { _ = try client.request(.status) }
        }
    }

    /// The stall timeout is for connections with output waiting: a client with nothing pending stays
    /// connected however long it is quiet. Here the timeout is 200 ms and the client is quiet for 1 s.
    @Test func aClientThatSendsNothingIsLeftAlone() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let configuration = ControlServerConfiguration(stallTimeout: .milliseconds(200))
        let server = try ControlServer(path: directory.socket(), configuration: configuration, handler: StubHandler().handler)
        defer { server.stop() }
        let path = server.path
        let quiet = try await onThread { try ControlClient(path: path) }
        #expect(await waitUntil { server.connectionCount == 1 })
        #expect(try await onThread { try ControlClient.request(.status, path: path) }.text.hasPrefix("{\"ok\":true"))
        // Five stall timeouts of silence.
        try await Task.sleep(for: .seconds(1))
        #expect(server.connectionCount == 1, "the quiet client is still connected")
        #expect(try await onThread { try quiet.request(.status) }.text.hasPrefix("{\"ok\":true"), "and is still served")
    }
}
