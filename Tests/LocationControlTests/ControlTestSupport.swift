import Foundation
import LocationCore
import Testing

@testable import LocationControl

#if canImport(Glibc)
import Glibc
#endif

/// A fresh directory under /tmp (short, so socket paths fit `sun_path`), removed by `remove()`.
struct TemporaryDirectory: Sendable {
    let path: String

    init() throws {
        var template = Array("/tmp/lctl-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw ControlError(.io, "mkdtemp failed") }
        path = String(cString: made)
    }

    /// A socket path inside the directory.
    func socket(_ name: String = "control.sock") -> String { path + "/" + name }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Runs blocking work on a thread of its own so the cooperative pool (two threads here) stays free for the
/// server's request tasks.
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            continuation.resume(with: Result { try body() })
        }
        thread.stackSize = 256 * 1024
        thread.start()
    }
}

/// Polls `condition` every few milliseconds until it holds or `limit` passes; for effects of real sockets.
func waitUntil(_ limit: Duration = .seconds(10), _ condition: @Sendable () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}

/// The daemon's side in tests: answers every command from fixed data and records what it was asked.
final class StubHandler: Sendable {
    static let location = ControlFixtures.location

    struct Status: Codable, Equatable {
        var state: String
        var batchSize: Int
    }

    let requests = Locked<[ControlRequest]>([])
    let watchers = Locked<[ControlConnection]>([])
    let state = Locked(ApplicationState.active)

    var handler: ControlServer.Handler {
        { [self] request, connection in await answer(request, connection) }
    }

    func answer(_ request: ControlRequest, _ connection: ControlConnection) async -> ControlReply {
        requests.withLock { $0.append(request) }
        switch request {
        case .current(let timeout, _, _):
            if timeout == .zero { return .failure(LocationError(.noFix, "no fix within 0 s")) }
            return .location(Self.location)
        case .state(let target):
            if let target {
                guard let next = ApplicationState(rawValue: target) else {
                    return .failure(ControlError(.badRequest, "unknown state \"\(target)\""))
                }
                state.withLock { $0 = next }
            }
            let current = state.value
            let background = current == .background || current == .suspended
            return .state(current, executingInBackground: background, policy: background ? .reduced : .high)
        case .status:
            return .status(Status(state: state.value.rawValue, batchSize: 3))
        case .watch:
            watchers.withLock { $0.append(connection) }
            return .watching(then: [Array("{\"type\":\"hello\"}\n".utf8)])
        case .open(let app, _, _, _, _):
            return .opened(app: app, created: true, state: state.value, policy: .high)
        case .apps, .remove:
            return .failure(ControlError(.unknownCommand, "this test server keeps no apps"))
        case .acknowledge:
            return .failure(ControlError(.unknownCommand, "this test server sends no batches"))
        case .sky:
            return .failure(ControlError(.unknownCommand, "this test server has no receiver"))
        case .monitorRegion, .stopMonitoringRegion, .regions:
            return .failure(ControlError(.unknownCommand, "this test server keeps no regions"))
        }
    }
}

/// A client socket speaking raw bytes, for what ``ControlClient`` never sends.
final class RawSocket: Sendable {
    let fd: Int32

    init(path: String) throws {
        fd = try UnixSocket.makeStreamSocket(nonBlocking: false, path: path)
        let result = try UnixSocket.withAddress(path) { connect(fd, $0, $1) }
        guard result == 0 else { throw ControlError(.io, "connect failed: \(errno)") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func write(_ text: String) { write(Array(text.utf8)) }

    func write(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { UnixSocket.send(fd, UnsafeRawBufferPointer(rebasing: $0[offset...])) }
            guard case .success(let count) = sent, count > 0 else { return }
            offset += count
        }
    }

    func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    /// Everything until the server closes the connection (or 10 s pass), as lines.
    func readToEnd() -> [String] {
        var all: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            all += chunk[0..<count]
        }
        return String(decoding: all, as: UTF8.self).split(separator: "\n").map(String.init)
    }
}

/// The JSON object of a line, for asserting on fields.
func object(_ line: [UInt8]) throws -> [String: Any] {
    try #require(JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
}

func object(_ line: String) throws -> [String: Any] {
    try object(Array(line.utf8))
}

/// The error code of a failure reply line.
func errorCode(_ line: String) throws -> String? {
    let json = try object(line)
    return (json["error"] as? [String: Any])?["code"] as? String
}

/// A file read with read(2) until end of file; /proc files report no size, so readers that trust it stop early.
func readWholeFile(_ path: String) -> String {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return "" }
    defer { close(fd) }
    var all: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { break }
        all += chunk[0..<count]
    }
    return String(decoding: all, as: UTF8.self)
}
