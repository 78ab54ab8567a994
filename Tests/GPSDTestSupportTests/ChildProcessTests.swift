import Dispatch
import Foundation
import GPSDTestSupport
import LocationCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("ChildProcess: a helper process in its own group")
struct ChildProcessTests {
    @Test("stop() ends the child with SIGTERM and kills what it left in its group", .timeLimit(.minutes(1)))
    func stopEndsTheGroup() throws {
        let child = try ChildProcess(["sh", "-c", "sleep 300 & echo $!; wait"], captureStandardOutput: true)
        let output = try #require(child.standardOutput)
        defer { close(output) }
        let line = try #require(Self.readLine(output, timeout: .seconds(30)), "sh printed its background job's id")
        let sleeper = try #require(pid_t(line))
        #expect(Self.isLive(sleeper), "the background sleep runs")
        #expect(getpgid(sleeper) == child.pid, "it is in the child's process group")

        #expect(child.stop() == .signalled(SIGTERM), "sh ends on SIGTERM, well within its grace")
        #expect(!Self.isLive(sleeper), "the sleep that outlived sh is gone when stop() returns")
    }

    @Test("a signal blocked in the starting thread is unblocked in the child", .timeLimit(.minutes(1)))
    func signalMaskIsReset() throws {
        var block = sigset_t()
        sigemptyset(&block)
        sigaddset(&block, SIGTERM)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &block, &previous)
        // posix_spawn copies the calling thread's mask unless told otherwise.
        let child = Result { try ChildProcess(["sleep", "300"]) }
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        let sleeper = try child.get()
        let clock = ContinuousClock()
        let start = clock.now
        // With SIGTERM blocked the sleep would outlast the grace and end by SIGKILL.
        #expect(sleeper.stop(grace: .seconds(30)) == .signalled(SIGTERM))
        #expect(start.duration(to: clock.now) < .seconds(30))
    }

    @Test("the child is reaped once: wait, reap, stop and signals after it agree and are harmless", .timeLimit(.minutes(1)))
    func reapedOnce() throws {
        let child = try ChildProcess(["sh", "-c", "exit 3"])
        #expect(child.wait() == .exited(3))
        #expect(child.reap() == .exited(3))
        #expect(child.wait() == .exited(3))
        #expect(child.stop() == .exited(3))
        #expect(!child.signal(SIGTERM), "nothing is sent to a reaped child's id")
        #expect(!child.signalGroup(SIGKILL))
    }

    @Test("threads reaping at the same time all see the one exit status", .timeLimit(.minutes(1)))
    func concurrentReaping() throws {
        let child = try ChildProcess(["sh", "-c", "sleep 0.2; exit 7"])
        let results = Locked<[ChildProcess.Termination]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { index in
            let ended: ChildProcess.Termination? =
                switch index % 3 {
                case 0: child.wait()
                case 1: child.waitForExit(timeout: .seconds(30))
                default: child.stop(grace: .seconds(30))
                }
            results.withLock { $0.append(ended ?? .unknown) }
        }
        #expect(results.value.count == 8)
        // stop() may have ended the sleep first; either way every caller sees the same termination.
        #expect(Set(results.value.map(\.description)).count == 1, "\(results.value)")
    }

    @Test("waitForExit returns nil while the child runs and its termination once it has exited", .timeLimit(.minutes(1)))
    func waitForExit() async throws {
        let child = try ChildProcess(["sh", "-c", "read line; exit 5"], captureStandardOutput: false)
        // Standard input is /dev/null, so `read` sees end of file at once and sh exits 5.
        #expect(await child.waitForExit(timeout: .seconds(30)) == .exited(5))
        let sleeper = try ChildProcess(["sleep", "300"])
        #expect(await sleeper.waitForExit(timeout: .milliseconds(100)) == nil)
        #expect(sleeper.stop() == .signalled(SIGTERM))
    }

    @Test("the environment given is added to this process's, and standard output can be captured", .timeLimit(.minutes(1)))
    func environmentAndOutput() throws {
        let home = ProcessInfo.processInfo.environment["HOME"] ?? ""
        let child = try ChildProcess(
            ["sh", "-c", #"printf '%s|%s' "$SUPPORT_TEST_VALUE" "$HOME""#], environment: ["SUPPORT_TEST_VALUE": "kept"],
            captureStandardOutput: true)
        let output = try #require(child.standardOutput)
        defer { close(output) }
        #expect(Self.readAll(output, timeout: .seconds(30)) == "kept|\(home)")
        #expect(child.wait() == .exited(0))
    }

    @Test("children(named:) finds what the child started, while it runs", .timeLimit(.minutes(1)))
    func children() throws {
        let child = try ChildProcess(["sh", "-c", "sleep 300 & wait"])
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(30)
        var found: [pid_t] = []
        while found.isEmpty, clock.now < deadline {
            found = child.children(named: "sleep")
            if found.isEmpty { usleep(10_000) }
        }
        #expect(found.count == 1)
        #expect(child.children(named: "gpsd").isEmpty)
        child.stop()
        #expect(found.allSatisfy { !Self.isLive($0) })
    }

    @Test("a program that is not installed is an error saying so")
    func notInstalled() {
        let error = #expect(throws: TestSupportError.self) { try ChildProcess(["no-such-program-for-gpsd-tests"]) }
        if let error {
            #expect(error == .notInstalled(program: "no-such-program-for-gpsd-tests", install: "install it, or give its path"))
            #expect(error.code == "not-installed")
            #expect(error.message.hasPrefix("no-such-program-for-gpsd-tests is not installed (looked on PATH and in /usr/local/sbin,"))
        }
    }

    /// Whether `pid` is a process that has not ended (a zombie has).
    static func isLive(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        return stat[stat.index(after: close)...].split(separator: " ").first != "Z"
    }

    /// The first line from `fd`, without its newline; nil at end of file or after `timeout`.
    static func readLine(_ fd: Int32, timeout: Duration) -> String? {
        var bytes: [UInt8] = []
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var byte: UInt8 = 0
        while clock.now < deadline {
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 100) >= 0 else { return nil }
            guard ready.revents != 0 else { continue }
            guard read(fd, &byte, 1) == 1 else { return nil }
            if byte == 0x0A { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
        return nil
    }

    /// Everything from `fd` up to end of file (or what came within `timeout`).
    static func readAll(_ fd: Int32, timeout: Duration) -> String {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 100) >= 0 else { break }
            guard ready.revents != 0 else { continue }
            let count = read(fd, &buffer, buffer.count)
            guard count > 0 else { break }
            bytes += buffer[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
