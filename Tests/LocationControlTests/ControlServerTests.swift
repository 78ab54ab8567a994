import Foundation
import LocationCore
import Testing

@testable import LocationControl

#if canImport(Glibc)
import Glibc
#endif

@Suite("Control server over a real socket")
struct ControlServerTests {
    @Test func socketFileIsOwnerOnlyInAPrivateDirectory() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // As in /run: the directory above the socket's own exists; the socket's own is created.
        #expect(mkdir(directory.path + "/run", 0o755) == 0)
        let path = directory.path + "/run/locationd/control.sock"
        let server = try ControlServer(path: path, handler: StubHandler().handler)
        defer { server.stop() }

        var info = stat()
        #expect(lstat(path, &info) == 0)
        #expect(info.st_mode & S_IFMT == S_IFSOCK)
        #expect(info.st_mode & 0o777 == 0o600)
        #expect(stat(directory.path + "/run/locationd", &info) == 0)
        #expect(info.st_mode & 0o777 == 0o700)
    }

    @Test func everyCommandRoundTrips() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let stub = StubHandler()
        let server = try ControlServer(path: directory.socket(), handler: stub.handler)
        defer { server.stop() }

        let path = server.path
        try await onThread {
            let client = try ControlClient(path: path)
            let current = try client.request(.current(timeout: .seconds(5), accuracy: 50))
            #expect(try current.decode(Location.self, forKey: "location") == StubHandler.location)

            let state = try client.request(.state(set: nil))
            #expect(state.text == #"{"ok":true,"state":"active","executingInBackground":false,"policy":"high"}"#)
            let moved = try client.request(.state(set: "background"))
            #expect(moved.text == #"{"ok":true,"state":"background","executingInBackground":true,"policy":"reduced"}"#)

            let status = try client.request(.status)
            #expect(try status.decode(StubHandler.Status.self, forKey: "status")
                == StubHandler.Status(state: "background", batchSize: 3))

            #expect {
                try client.request(.current(timeout: .zero, accuracy: nil))
            } throws: { error in
                (error as? ControlError)?.code.rawValue == "no-fix"
            }
        }
        #expect(stub.requests.value == [
            .current(timeout: .seconds(5), accuracy: 50), .state(set: nil), .state(set: "background"), .status,
            .current(timeout: .zero, accuracy: nil),
        ])
    }

    @Test func watchStreamsBroadcastsAndDirectSends() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let stub = StubHandler()
        let server = try ControlServer(path: directory.socket(), handler: stub.handler)
        defer { server.stop() }

        let path = server.path
        let client = try ControlClient(path: path)
        let events = try await onThread { try client.watch() }
        #expect(server.watcherCount == 1)
        let connection = try #require(stub.watchers.value.first)
        #expect(connection.isWatching)
        #expect(server.broadcast(Array(#"{"type":"state","state":"background"}"#.utf8)) == 1)
        #expect(connection.send(Array("{\"type\":\"direct\"}\n".utf8)))

        var lines: [String] = []
        for try await line in events {
            lines.append(String(decoding: line, as: UTF8.self))
            if lines.count == 3 { break }
        }
        #expect(lines == [#"{"type":"hello"}"#, #"{"type":"state","state":"background"}"#, #"{"type":"direct"}"#])
        client.close()
        #expect(await waitUntil { server.watcherCount == 0 })
        #expect(connection.send(Array("{}\n".utf8)) == false)
    }

    @Test func aRefusedWatchDoesNotMakeAWatcher() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let server = try ControlServer(path: directory.socket()) { _, _ in
            .failure("not-ready", "the source is not running")
        }
        defer { server.stop() }
        let path = server.path
        await #expect {
            try await onThread { try ControlClient(path: path).watch() }
        } throws: { error in
            (error as? ControlError)?.code.rawValue == "not-ready"
        }
        #expect(server.watcherCount == 0)
        #expect(server.broadcast(Array("{}".utf8)) == 0)
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let server = try ControlServer(path: directory.socket()) { request, _ in
            if case .current = request { try? await Task.sleep(for: .milliseconds(30)) }
            return .success(["command": request.command])
        }
        defer { server.stop() }

        let path = server.path
        let lines = try await onThread {
            let socket = try RawSocket(path: path)
            socket.write("{\"command\":\"current\"}\n{\"command\":\"status\"}\n\n{\"command\":\"state\"}\n")
            socket.shutdownWrite()
            return socket.readToEnd()
        }
        #expect(lines == [
            #"{"ok":true,"command":"current"}"#, #"{"ok":true,"command":"status"}"#,
            #"{"ok":true,"command":"state"}"#,
        ])
    }

    @Test("a last request without its newline, from a client that shut its sending side, is answered")
    func lastRequestWithoutNewlineIsAnswered() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let server = try ControlServer(path: directory.socket()) { request, _ in .success(["command": request.command]) }
        defer { server.stop() }
        let path = server.path
        let lines = try await onThread {
            let socket = try RawSocket(path: path)
            socket.write("{\"command\":\"status\"}\n{\"command\":\"state\"}")
            socket.shutdownWrite()
            return socket.readToEnd()
        }
        #expect(lines == [#"{"ok":true,"command":"status"}"#, #"{"ok":true,"command":"state"}"#])
    }

    @Test func malformedAndUnknownRequestsGetErrorsAndTheConnectionStaysOpen() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let server = try ControlServer(path: directory.socket(), handler: StubHandler().handler)
        defer { server.stop() }

        let path = server.path
        try await onThread {
            let client = try ControlClient(path: path)
            try client.send(rawLine: Array("{\"command\": oops\n".utf8))
            let malformed = String(decoding: try client.readLine(timeout: .seconds(5)), as: UTF8.self)
            #expect(try errorCode(malformed) == "bad-request")

            try client.send(rawLine: Array("{\"command\":\"teleport\"}\n".utf8))
            let unknown = String(decoding: try client.readLine(timeout: .seconds(5)), as: UTF8.self)
            #expect(try errorCode(unknown) == "unknown-command")
            #expect(unknown.contains("teleport"))

            try client.send(rawLine: Array("{\"timeout\":3}\n".utf8))
            #expect(try errorCode(String(decoding: try client.readLine(timeout: .seconds(5)), as: UTF8.self))
                == "unknown-command")

            // Still usable.
            #expect(try client.request(.state(set: nil)).text.contains("\"state\":\"active\""))
        }
    }

    @Test func oversizedLineIsRefusedAndClosed() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let server = try ControlServer(path: directory.socket(), handler: StubHandler().handler)
        defer { server.stop() }
        #expect(server.configuration.maxRequestLength == 65536)

        let path = server.path
        let lines = try await onThread {
            let socket = try RawSocket(path: path)
            socket.write("{\"command\":\"status\"}\n")
            // 64 KiB + 1 without a newline: refused before the line ends.
            socket.write("{\"command\":\"status\",\"pad\":\"" + String(repeating: "x", count: 65536) + "\"}\n")
            return socket.readToEnd()
        }
        try #require(lines.count == 2)
        #expect(lines.first?.hasPrefix("{\"ok\":true,\"status\"") == true)
        #expect(try errorCode(lines[1]) == "request-too-large")
        #expect(await waitUntil { server.connectionCount == 0 })
    }

    @Test func aLineOfExactlyTheLimitIsAccepted() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let configuration = ControlServerConfiguration(maxRequestLength: 100)
        let server = try ControlServer(path: directory.socket(), configuration: configuration, handler: StubHandler().handler)
        defer { server.stop() }

        let base = "{\"command\":\"status\"}"
        let exact = "{\"command\":\"status\"" + String(repeating: " ", count: 100 - base.count) + "}"
        #expect(exact.utf8.count == 100)
        let path = server.path
        let lines = try await onThread {
            let socket = try RawSocket(path: path)
            socket.write(exact + "\n" + exact + "z\n")
            return socket.readToEnd()
        }
        #expect(lines.count == 2)
        #expect(try errorCode(lines[0]) == nil)
        #expect(try errorCode(lines[1]) == "request-too-large")
    }

    @Test func staleSocketFileIsReplaced() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.socket()
        // A socket file left behind by a process that died: bound, never unlinked, nobody listening.
        let fd = try UnixSocket.makeStreamSocket(nonBlocking: false, path: path)
        #expect(try UnixSocket.withAddress(path) { bind(fd, $0, $1) } == 0)
        close(fd)
        #expect(FileManager.default.fileExists(atPath: path))

        let server = try ControlServer(path: path, handler: StubHandler().handler)
        defer { server.stop() }
        #expect(try await onThread { try ControlClient.request(.status, path: path) }.text.contains("\"ok\":true"))
    }

    @Test func liveServerIsDetected() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.socket()
        let first = try ControlServer(path: path, handler: StubHandler().handler)
        defer { first.stop() }

        #expect {
            try ControlServer(path: path, handler: StubHandler().handler)
        } throws: { error in
            let error = error as? ControlError
            return error?.code == .alreadyListening && error?.message == "another locationd is listening on \(path)"
        }
        // The first server is untouched.
        #expect(try await onThread { try ControlClient.request(.status, path: path) }.text.contains("\"ok\":true"))
    }

    @Test func aFileThatIsNotASocketIsLeftAlone() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.socket()
        _ = FileManager.default.createFile(atPath: path, contents: Data("keep me".utf8))
        #expect {
            try ControlServer(path: path, handler: StubHandler().handler)
        } throws: { ($0 as? ControlError)?.code == .addressInUse }
        #expect(FileManager.default.contents(atPath: path) == Data("keep me".utf8))
    }

    @Test func pathTooLongNamesTheLimit() throws {
        let path = "/tmp/" + String(repeating: "p", count: 120) + "/control.sock"
        #expect {
            try ControlServer(path: path, handler: StubHandler().handler)
        } throws: { error in
            let error = error as? ControlError
            return error?.code == .pathTooLong && error?.message.contains("107") == true
        }
        #expect {
            try ControlClient(path: path)
        } throws: { ($0 as? ControlError)?.code == .pathTooLong }
    }

    @Test func unwritableDirectoryIsReported() throws {
        // /proc refuses new entries even for root, like /run/locationd refuses an ordinary user.
        let error = #expect(throws: ControlError.self) {
            try ControlServer(path: "/proc/locationd-test/control.sock", handler: StubHandler().handler)
        }
        #expect(error?.code == .io)
        #expect(
            error?.message
                == "cannot create directory /proc/locationd-test for socket /proc/locationd-test/control.sock: No such file or directory")
    }

    @Test func clientDistinguishesMissingSocketFromStaleOne() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // Names that say nothing of what the test expects, so the message alone must tell them apart.
        let missing = directory.socket("one.sock")
        let missingError = #expect(throws: ControlError.self) { try ControlClient(path: missing) }
        #expect(missingError?.code == .notListening)
        #expect(missingError?.message == "no locationd socket at \(missing) (is locationd running?)")

        let stale = directory.socket("two.sock")
        let fd = try UnixSocket.makeStreamSocket(nonBlocking: false, path: stale)
        _ = try UnixSocket.withAddress(stale) { bind(fd, $0, $1) }
        close(fd)
        let staleError = #expect(throws: ControlError.self) { try ControlClient(path: stale) }
        #expect(staleError?.code == .notListening)
        #expect(staleError?.message == "nothing is listening on \(stale) (a stale socket file; is locationd running?)")
    }

    @Test func stopRemovesTheSocketAndEndsWatchers() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.socket()
        let server = try ControlServer(path: path, handler: StubHandler().handler)
        let events = try await onThread { try ControlClient(path: path).watch() }
        #expect(server.connectionCount == 1)

        server.stop()
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(server.connectionCount == 0)
        #expect(server.broadcast(Array("{}\n".utf8)) == 0)
        server.stop()

        var received: [[UInt8]] = []
        let ended = await #expect(throws: ControlError.self) {
            for try await line in events { received.append(line) }
        }
        #expect(ended?.code == .connectionClosed, "\(String(describing: ended))")
        #expect(received.map { String(decoding: $0, as: UTF8.self) } == [#"{"type":"hello"}"#])
        #expect {
            try ControlClient(path: path)
        } throws: { ($0 as? ControlError)?.code == .notListening }
    }

    @Test func stopDoesNotRemoveASuccessorsSocket() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.socket()
        let old = try ControlServer(path: path, handler: StubHandler().handler)
        // Someone removed the old file and a new server took the path.
        unlink(path)
        let successor = try ControlServer(path: path, handler: StubHandler().handler)
        defer { successor.stop() }
        old.stop()
        #expect(try await onThread { try ControlClient.request(.status, path: path) }.text.contains("\"ok\":true"))
    }

    @Test func stoppingOrReleasingClosesEverySocket() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // /proc/net/unix lists every socket bound to a path, listeners and their accepted connections alike.
        let boundHere = { @Sendable () -> Int in
            let table = readWholeFile("/proc/net/unix")
            return table.split(separator: "\n").filter { $0.contains(directory.path) }.count
        }
        for round in 0..<4 {
            let path = directory.socket("s\(round).sock")
            let server = try ControlServer(path: path, handler: StubHandler().handler)
            let watcher = try await onThread { () -> ControlClient in
                for _ in 0..<3 { _ = try ControlClient.request(.status, path: path) }
                let client = try ControlClient(path: path)
                _ = try client.request(.watch)
                return client
            }
            #expect(boundHere() >= 2)
            if round % 2 == 0 { server.stop() }
            _ = watcher
        }
        #expect(boundHere() == 0)
    }
}
