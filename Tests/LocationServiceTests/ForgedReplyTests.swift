import Foundation
import LocationCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `locationctl` against a stand-in daemon that sends malformed or hostile replies.
@Suite("locationctl and replies it cannot trust", .serialized)
struct ForgedReplyTests {
    /// Serves one connection on `path` on a thread of its own: reads a request line, writes `reply`, closes.
    final class OneReplyServer: Sendable {
        private let listener: Int32
        private let done = DispatchSemaphore(value: 0)
        private let served = Locked(false)

        init(_ path: String, reply: String) throws {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw POSIXError(.EIO) }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
            }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard bound == 0, listen(fd, 1) == 0 else {
                close(fd)
                throw POSIXError(.EADDRINUSE)
            }
            listener = fd
            Thread.detachNewThread { [done, served] in
                let client = accept(fd, nil, nil)
                if client >= 0 {
                    var buffer = [UInt8](repeating: 0, count: 4096)
                    _ = read(client, &buffer, buffer.count)
                    let bytes = Array(reply.utf8)
                    _ = bytes.withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
                    close(client)
                    served.withLock { $0 = true }
                }
                done.signal()
            }
        }

        deinit {
            // Ends an accept(2) still waiting (shutdown wakes it; close alone would not).
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
        }

        /// Whether a client was served, waiting at most `seconds` for the thread to end. A client that never
        /// came would leave it in accept(2) for ever: the listener is then shut down, which ends the wait.
        func servedClient(within seconds: Double = 10) -> Bool {
            if done.wait(timeout: .now() + seconds) == .timedOut {
                shutdown(listener, Int32(SHUT_RDWR))
                _ = done.wait(timeout: .now() + 5)
            }
            return served.value
        }
    }

    @Test(
        "a reply without the members a command needs is an error, never exit 0",
        arguments: [["state"], ["status"], ["current"]])
    func bareOkIsAnError(command: [String]) throws {
        let directory = TemporaryDirectory()
        let socket = directory.file("fake.sock")
        let server = try OneReplyServer(socket, reply: "{\"ok\":true}\n")
        let result = try Tool.run("locationctl", command + ["--socket", socket], timeout: 20, in: directory)
        #expect(server.servedClient(), "locationctl asked the stand-in daemon")
        #expect(result.status == 65, "\(result.stdout) \(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(result.stdout.isEmpty, "nothing printed as if it were the answer: \(result.stdout)")
    }

    @Test("a regular file or a directory given as --socket is named as such, not as a stale socket")
    func notASocket() throws {
        let directory = TemporaryDirectory()
        let file = directory.file("notes.txt")
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        for (path, kind) in [(file, "a regular file"), (directory.path, "a directory")] {
            let result = try Tool.run("locationctl", ["status", "--socket", path], in: directory)
            #expect(result.status == 69)
            #expect(result.stderr == "locationctl: locationd at \(path): \(path) is \(kind), not locationd's socket\n")
        }
    }

    @Test("a daemon too busy to serve is exit 69 with a line saying so, never 65")
    func busyDaemonIs69() throws {
        let directory = TemporaryDirectory()
        let socket = directory.file("fake.sock")
        let busy = #"{"ok":false,"error":{"code":"too-many-connections","message":"the daemon already serves 512 connections, all busy"}}"# + "\n"
        let server = try OneReplyServer(socket, reply: busy)
        let result = try Tool.run("locationctl", ["status", "--socket", socket], timeout: 20, in: directory)
        #expect(server.servedClient(), "locationctl asked the stand-in daemon")
        #expect(result.status == 69, "\(result.stderr)")
        #expect(result.stderr == "locationctl: locationd at \(socket) is busy: the daemon already serves 512 connections, all busy\n")
    }

    @Test("control characters in the daemon's messages reach the terminal escaped, on one line")
    func controlCharactersAreEscaped() throws {
        let directory = TemporaryDirectory()
        let socket = directory.file("fake.sock")
        let hostile = #"{"ok":false,"error":{"code":"bad-request","message":"\u001b[2J\u001b]0;owned\u0007line one\nlocationctl: forged second line\u009b31m"}}"# + "\n"
        let server = try OneReplyServer(socket, reply: hostile)
        let result = try Tool.run("locationctl", ["state", "--socket", socket], timeout: 20, in: directory)
        #expect(server.servedClient(), "locationctl asked the stand-in daemon")
        #expect(result.status == 64, "\(result.stderr)")
        #expect(!result.stderr.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" || (0x7F...0x9F).contains($0.value) })
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(result.stderr.contains(#"\u{1b}[2J"#), "\(result.stderr)")
    }
}
