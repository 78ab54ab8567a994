import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Another user must not be able to stand in for locationd on its socket.
@Suite("The control socket cannot be spoofed", .serialized)
struct SocketSpoofingTests {
    @Test("locationd refuses a socket directory that other users may write (exit 73, naming it)")
    func refusesAWritableDirectory() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 10)
        let open = directory.file("open")
        #expect(mkdir(open, 0o777) == 0 && chmod(open, 0o777) == 0)
        let socket = open + "/control.sock"
        let result = try Tool.run("locationd", ["--replay", track, "--socket", socket], timeout: 20, in: directory)
        #expect(result.status == 73, "\(result.stderr)")
        #expect(result.stderr.contains("the socket directory \(open) may be written by other users (mode 777)"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: socket))
    }

    @Test("a mistyped --socket creates nothing: only the socket's own directory is made, under one that exists")
    func createsOnlyTheSocketsOwnDirectory() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 10)
        let socket = directory.file("typo/run/control.sock")
        let result = try Tool.run("locationd", ["--replay", track, "--socket", socket], timeout: 20, in: directory)
        #expect(result.status != 0, "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "one line: \(result.stderr)")
        #expect(result.stderr.contains("cannot create directory \(directory.file("typo/run"))"), "\(result.stderr)")
        #expect(result.stderr.contains("\(directory.file("typo")) does not exist either"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.file("typo")), "no directory was created")
        // --check-config says so too, rather than "valid".
        let checked = try Tool.run("locationd", ["--replay", track, "--socket", socket, "--check-config"], timeout: 20, in: directory)
        #expect(checked.status == 73 && checked.stderr == result.stderr, "\(checked.stdout)\(checked.stderr)")
        // A path that names a directory (`DIR/`, `DIR/.`) is refused before anything is made.
        for named in ["made/", "made/."] {
            let refused = try Tool.run("locationd", ["--replay", track, "--socket", directory.file(named)], timeout: 20, in: directory)
            #expect(refused.status == 73, "\(named): \(refused.stderr)")
            #expect(refused.stderr.contains("names a directory; a socket path ends in a file name"), "\(refused.stderr)")
            #expect(!FileManager.default.fileExists(atPath: directory.file("made")), "\(named): nothing was created")
        }
        // So is a journal in a directory that is not there: named as given, nothing created.
        let journal = try Tool.run(
            "locationd", ["--replay", track, "--socket", directory.file("j.sock"), "--journal", directory.file("nodir/held.journal")],
            timeout: 20, in: directory)
        #expect(journal.status == 73, "\(journal.stderr)")
        #expect(journal.stderr == "locationd: cannot use the journal directory \(directory.file("nodir")): No such file or directory; create it (mode 700) or choose another --journal\n")
    }

    @Test(
        "a socket another user bound in a shared sticky directory is refused by locationctl with exit 77, nothing sent",
        .enabled(if: getuid() == 0, "switching to a second uid needs root"))
    func refusesAnImpostor() throws {
        let directory = TemporaryDirectory()
        chmod(directory.path, 0o755)
        let track = try directory.track(count: 200)
        chmod(track, 0o644)
        let shared = directory.file("shared")
        #expect(mkdir(shared, 0o777) == 0 && chmod(shared, 0o1777) == 0, "sticky and owned by root, as /tmp")
        let socket = shared + "/control.sock"
        let launcher = [
            "/usr/bin/setpriv", "--reuid=\(DaemonSocketTests.nobody.uid)", "--regid=\(DaemonSocketTests.nobody.gid)", "--clear-groups", "{}",
        ]
        let (impostor, _, _) = try Tool.start(
            "locationd", ["--replay", track, "--speed", "10", "--socket", socket], launcher: launcher, in: directory)
        defer {
            kill(impostor.processIdentifier, SIGTERM)
            impostor.waitUntilExit()
        }
        #expect(DaemonSignalTests.eventually { FileManager.default.fileExists(atPath: socket) })
        for arguments in [["status"], ["state", "active"], ["current", "--timeout", "5"], ["watch", "--count", "1"]] {
            let result = try Tool.run("locationctl", arguments + ["--socket", socket], timeout: 20, in: directory)
            #expect(result.status == 77, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains("runs as nobody (uid 65534), who is neither you, root, nor the owner of \(shared)"), "\(result.stderr)")
            #expect(result.stdout.isEmpty, "nothing forged is printed: \(result.stdout)")
        }
    }
}
