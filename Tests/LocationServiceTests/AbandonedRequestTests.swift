import Foundation
import LocationControl
import LocationCore
import LocationTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A `current` request whose client has gone costs nothing once it is noticed: the daemon's wait for a
/// fix is cancelled, not left to run out its timeout.
@Suite("Control socket: abandoned requests", .serialized)
struct AbandonedRequestTests {
    @Test("current requests with a day's timeout are cancelled in the manager when their clients close, and kept while they stay")
    func requestsOfClientsThatLeftAreCancelled() async throws {
        let directory = TemporaryDirectory()
        let source = ScriptedLocationSource()
        let application = Application()
        try application.transition(to: .active)
        let manager = try LocationManager(source: source, application: application)
        let socketPath = directory.file("control.sock")
        // What locationd does with `current`: wait for the manager's fix.
        let server = try ControlServer(path: socketPath) { request, _ in
            guard case .current(let timeout, let accuracy, _) = request else { return .failure(LocationError(.sourceFailed, "unexpected")) }
            do throws(LocationError) {
                return .location(try await manager.requestLocation(timeout: timeout ?? .seconds(30), desiredAccuracy: accuracy))
            } catch {
                return .failure(error)
            }
        }
        defer { server.stop() }

        let staying = try (0..<20).map { _ in try Self.sendCurrent(to: socketPath) }
        let leaving = try (0..<200).map { _ in try Self.sendCurrent(to: socketPath) }
        #expect(await Self.poll { manager.pendingRequestCount == 220 }, "\(manager.pendingRequestCount) requests pending")
        for fd in leaving { close(fd) }
        #expect(await Self.poll { manager.pendingRequestCount == 20 }, "\(manager.pendingRequestCount) requests pending after 200 clients left")
        // The clients that stayed still get their answer.
        await source.waitUntilListening()
        source.emit(LocationFixtures.walk(0))
        #expect(await Self.poll { manager.pendingRequestCount == 0 })
        for fd in staying {
            #expect(Self.readLine(fd).hasPrefix("{\"ok\":true"))
            close(fd)
        }
    }

    /// Connects and sends `current` with a timeout of a day; returns the socket.
    static func sendCurrent(to path: String) throws -> Int32 {
        let client = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        try #require(client >= 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(connected == 0, "connect: \(String(cString: strerror(errno)))")
        let line = Array("{\"command\":\"current\",\"timeout\":86400}\n".utf8)
        #expect(line.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == line.count)
        return client
    }

    /// One reply line (blocking, at most 10 s).
    static func readLine(_ fd: Int32) -> String {
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while recv(fd, &byte, 1, 0) == 1, byte != 10 { bytes.append(byte) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Polls `condition` until it holds or 10 s pass (effects of real sockets, not a timing assertion).
    static func poll(_ condition: @Sendable () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return condition()
    }
}
