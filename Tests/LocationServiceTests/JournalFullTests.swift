import Foundation
import LocationControl
import LocationCore
import LocationService
import LocationTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A journal that cannot be written (the disk full, a file size limit): said once, counted truly, mended
/// when writing works again.
@Suite(
    "A journal that cannot be written", .serialized,
    .sanitizerExclusion("LocationServiceTests.JournalFullTests"))
struct JournalFullTests {
    static func status(_ socket: String, in directory: TemporaryDirectory) throws -> DaemonStatus? {
        let result = try Tool.run("locationctl", ["status", "--socket", socket, "--format", "json"], in: directory)
        guard result.status == 0 else { return nil }
        return try? JSONDecoder().decode(DaemonStatus.self, from: Data(result.stdout.utf8))
    }

    @Test("the first failed append is one error and one log line; held and journaled are counted apart; the journal is whole again once writing works")
    func fullJournal() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 3_000)
        let socket = directory.file("d.sock"), journal = directory.file("held.journal")
        // A 4,000-byte file size limit (soft, so that it can be lifted): a few dozen records fit, then every
        // append fails with EFBIG. Suspended with one fix per second of track time at 50×: 50 held a second.
        let (daemon, _, log) = try Tool.start(
            "/usr/bin/prlimit",
            ["--fsize=4000:unlimited", Tool.path("locationd"), "--replay", track, "--speed", "50", "--reduced-interval", "1",
             "--socket", socket,
             "--journal", journal, "--state", "suspended"],
            in: directory)
        defer {
            kill(daemon.processIdentifier, SIGTERM)
            daemon.waitUntilExit()
        }
        var failing: DaemonStatus?
        #expect(DaemonSignalTests.eventually {
            failing = try? Self.status(socket, in: directory)
            return (failing?.unjournaled ?? 0) > 20
        })
        let before = try #require(failing)
        #expect(before.journalProblem?.contains("cannot append to journal \(journal): File too large") == true, "\(before)")
        #expect(before.held > before.unjournaled)

        // Room again: the next append rewrites the journal with every held fix.
        let lifted = try Tool.run("/usr/bin/prlimit", ["--pid", "\(daemon.processIdentifier)", "--fsize=unlimited"], in: directory)
        #expect(lifted.status == 0, "\(lifted.stderr)")
        var mended: DaemonStatus?
        #expect(DaemonSignalTests.eventually {
            mended = try? Self.status(socket, in: directory)
            return mended.map { $0.unjournaled == 0 && $0.held > before.held } ?? false
        })
        let copy = directory.file("copy.journal")
        try FileManager.default.copyItem(atPath: journal, toPath: copy)
        let (reader, contents) = try LocationJournal.open(path: copy)
        reader.close()
        #expect(contents.problem == nil)
        let heldWhenMended = try #require(mended).held
        #expect(contents.locations.count >= heldWhenMended, "every held fix is in the journal again")

        let lines = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(lines.components(separatedBy: "cannot append to journal").count == 2, "one log line for the failing run: \(lines)")
        #expect(!lines.contains("NSCocoaErrorDomain"))
    }

    @Test("appends failed and no fix comes after room returns: a graceful stop rewrites the journal with every held fix")
    func gracefulStopMendsTheJournal() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 200)
        let socket = directory.file("d.sock"), journal = directory.file("held.journal")
        let (daemon, _, log) = try Tool.start(
            "/usr/bin/prlimit",
            ["--fsize=4000:unlimited", Tool.path("locationd"), "--replay", track, "--speed", "100", "--reduced-interval", "1",
             "--socket", socket, "--journal", journal, "--state", "suspended"],
            in: directory)
        // The track ends (no loop): then nothing more is appended.
        var last: DaemonStatus?
        var steady = 0
        #expect(DaemonSignalTests.eventually {
            let now = try? Self.status(socket, in: directory)
            steady = now?.held == last?.held && (now?.unjournaled ?? 0) > 0 ? steady + 1 : 0
            last = now
            return steady >= 5
        })
        let held = try #require(last).held
        let lifted = try Tool.run("/usr/bin/prlimit", ["--pid", "\(daemon.processIdentifier)", "--fsize=unlimited"], in: directory)
        #expect(lifted.status == 0, "\(lifted.stderr)")
        kill(daemon.processIdentifier, SIGTERM)
        daemon.waitUntilExit()
        #expect(daemon.terminationStatus == 0)
        let (reader, contents) = try LocationJournal.open(path: journal)
        reader.close()
        #expect(contents.problem == nil)
        #expect(contents.locations.count == held, "every held fix is in the journal for the next start")
        let lines = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(lines.contains("holds all \(held) held fixes for the next start"), "\(lines)")
    }
}
