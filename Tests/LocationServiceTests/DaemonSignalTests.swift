import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What each signal does to `locationd`: graceful shutdown (socket removed, exit 0) or nothing at all.
@Suite("locationd and signals", .serialized)
struct DaemonSignalTests {
    /// Waits (polling) until `condition` holds or 20 s pass.
    static func eventually(_ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(20)
        while !condition() {
            if Date() > deadline { return false }
            usleep(20_000)
        }
        return true
    }

    @Test("SIGHUP, SIGTERM and SIGINT shut down gracefully: exit 0, the socket removed", arguments: [SIGHUP, SIGTERM, SIGINT])
    func gracefulSignals(signal: Int32) throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 100)
        let socket = directory.file("d.sock")
        let (process, _, _) = try Tool.start("locationd", ["--replay", track, "--socket", socket], in: directory)
        #expect(Self.eventually { FileManager.default.fileExists(atPath: socket) })
        kill(process.processIdentifier, signal)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
        #expect(!FileManager.default.fileExists(atPath: socket))
    }

    @Test("SIGPIPE, SIGUSR1, SIGUSR2 and SIGALRM are ignored: the daemon keeps answering")
    func ignoredSignals() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 100)
        let socket = directory.file("d.sock")
        let (process, _, _) = try Tool.start("locationd", ["--replay", track, "--socket", socket], in: directory)
        defer {
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
        }
        #expect(Self.eventually { FileManager.default.fileExists(atPath: socket) })
        for signal in [SIGPIPE, SIGUSR1, SIGUSR2, SIGALRM] { kill(process.processIdentifier, signal) }
        let status = try Tool.run("locationctl", ["status", "--socket", socket], in: directory)
        #expect(status.status == 0, "\(status.stderr)")
        #expect(process.isRunning)
    }

    @Test("a daemon whose log reader went away still shuts down gracefully on SIGTERM")
    func closedLogReader() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 100)
        let socket = directory.file("d.sock")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Tool.path("locationd"))
        process.arguments = ["--replay", track, "--socket", socket]
        let log = Pipe()
        process.standardError = log
        process.standardOutput = log
        try process.run()
        #expect(Self.eventually { FileManager.default.fileExists(atPath: socket) })
        try log.fileHandleForReading.close()
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0, "status \(process.terminationStatus)")
        #expect(!FileManager.default.fileExists(atPath: socket))
    }
}
