import Foundation
import GPSDTestSupport
import LocationControl
import LocationCore
import LocationService
import LocationTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Rounds of the kill -9 test: `LOCATION_STRESS_ROUNDS`, else 20 (about half a minute on two idle cores), or 6
/// under a sanitizer: there the code paths are what is checked (a few rounds take each), and the many rounds
/// that hunt for an unlucky moment run in the normal build.
private let stressRounds = max(
    1, ProcessInfo.processInfo.environment["LOCATION_STRESS_ROUNDS"].flatMap(Int.init) ?? (Sanitizer.active == nil ? 20 : 6))

@Suite("locationd killed with SIGKILL: lifecycle state and held fixes survive", .serialized)
struct DaemonCrashTests {
    /// Replay flags: fix times follow the wall clock (so they keep increasing across restarts), one held fix per
    /// 0.2 s of wall time (one per 2 s of track time at 10×), and suspension instead of live background updates.
    /// A daemon with a journal, suspended and killed with SIGKILL: its directory, flags and state record.
    static func killedWhileSuspended() throws -> (TemporaryDirectory, [String], LifecycleStateFile) {
        let directory = TemporaryDirectory()
        let journal = directory.file("held.journal")
        let flags = Self.flags(journal: journal)
        let daemon = try RunningDaemon(directory: directory, extra: flags)
        _ = try ControlClient.request(.state(set: "suspended"), path: daemon.socket)
        daemon.kill9()
        return (directory, flags, LifecycleStateFile(journalPath: journal))
    }

    static func flags(journal: String) -> [String] {
        ["--timestamps", "now", "--loop", "--journal", journal, "--reduced-interval", "2", "--background-location", "off"]
    }

    @Test(
        "kill -9 at random moments while suspended: the daemon comes back suspended and the next foreground delivers every held fix once, in order",
        .timeLimit(.minutes(stressRounds / 15 + 3)))
    func killedWhileSuspendedOverManyRounds() throws {
        let seed = SplitMix64.seed(fromEnvironment: "LOCATION_STRESS_SEED")
        var random = SplitMix64(seed: seed)
        let repeatHint = "LOCATION_STRESS_SEED=\(seed) LOCATION_STRESS_ROUNDS=\(stressRounds)"
        print("kill -9 stress: \(stressRounds) rounds; repeat with \(repeatHint)")
        let started = ContinuousClock.now
        let directory = TemporaryDirectory()
        let journal = directory.file("held.journal")
        let flags = Self.flags(journal: journal)

        var daemon = try RunningDaemon(directory: directory, extra: flags)
        #expect(try daemon.status().state == .active, "a first start without a saved state is active")
        _ = try ControlClient.request(.state(set: "suspended"), path: daemon.socket)
        // The journal as found after the previous kill: every later snapshot must extend it.
        var snapshot: [Location] = []
        var earlyKills = 0
        var tornTails = 0
        for round in 0..<stressRounds {
            let context = "round \(round); repeat with \(repeatHint)"
            // Poll at random intervals until a random moment, then kill: every fix the daemon reported holding
            // was acquired before the kill.
            var maxHeld = 0
            let killAt = ContinuousClock.now + .milliseconds(Int.random(in: 0...2500, using: &random))
            while ContinuousClock.now < killAt {
                maxHeld = max(maxHeld, try daemon.status().held)
                let pause = min(Duration.milliseconds(Int.random(in: 10...250, using: &random)), killAt - .now)
                if pause > .zero { usleep(UInt32(pause.microseconds)) }
            }
            daemon.kill9()
            let found = try Self.readJournal(journal)
            tornTails += try Self.check(found, extends: &snapshot, held: maxHeld, "\(context)")

            // Sometimes kill a restart before it even answers, in the middle of loading the journal.
            if Int.random(in: 0..<4, using: &random) == 0 {
                let early = try RunningDaemon(directory: directory, extra: flags, waitUntilAnswering: false)
                usleep(UInt32.random(in: 0...400_000, using: &random))
                early.kill9()
                earlyKills += 1
                tornTails += try Self.check(try Self.readJournal(journal), extends: &snapshot, held: 0, "\(context)")
            }

            daemon = try RunningDaemon(directory: directory, extra: flags)
            #expect(try daemon.status().state == .suspended, "the restarted daemon is suspended again; \(context)")
            #expect(Self.loadedCount(daemon.logText) == snapshot.count, "it loaded every journaled fix; \(context)")
        }

        // A client connects before the foreground and gets everything held across all the kills, once, in order.
        let heldBefore = try daemon.status().held
        let (batch, live) = try Self.foreground(daemon)
        let context = "after \(stressRounds) rounds; repeat with \(repeatHint)"
        #expect(batch.count >= heldBefore, "\(context)")
        #expect(batch.count >= snapshot.count, "\(context)")
        #expect(Self.isIncreasing(batch), "no duplicate and no fix out of order; \(context)")
        let startsWithJournal = Self.same(Array(batch.prefix(snapshot.count)), snapshot)
        #expect(startsWithJournal, "the batch starts with the journal; \(context)")
        if let last = batch.last, let first = live.first {
            #expect(first.timestamp > last.timestamp, "live fixes follow the batch; \(context)")
        }

        // Acknowledged means gone: once the journal is cleared and the batch acknowledged, a crash and restart
        // deliver none of it again.
        let cleared = Self.waitUntil { (try? Self.readJournal(journal).locations.isEmpty) == true }
        #expect(cleared, "the journal is cleared after the flush; \(context)")
        #expect(Self.waitUntil { (try? daemon.status().unacknowledged) == 0 }, "the batch was acknowledged; \(context)")
        daemon.kill9()
        let after = try RunningDaemon(directory: directory, extra: flags)
        let status = try after.status()
        #expect(status.state == .active, "\(context)")
        #expect(status.held == 0, "\(context)")
        #expect(status.unacknowledged == 0, "\(context)")
        #expect(!after.logText.contains(/held fix(es)? from journal/), "\(context)")
        print(
            "kill -9 stress: \(stressRounds) rounds (\(earlyKills) during start-up) in "
                + "\(Int((ContinuousClock.now - started).seconds)) s; \(batch.count) held fixes delivered in one batch; "
                + "\(tornTails) torn journal tails cut off")
    }

    @Test("a daemon restarting into a saved suspended state records no other state on its way there")
    func restartRecordsOnlyTheStateItResumes() throws {
        let (directory, flags, record) = try Self.killedWhileSuspended()
        // A kill at any moment of the start-up must find the record suspended: one that said active there
        // would flush the journal to nobody on the next start. The launch walks through active, inactive and
        // background; so the record is read as fast as it can be until the daemon has answered and then
        // for a second more, over a few starts.
        var reads = 0
        var others: [String] = []
        for _ in 0..<3 {
            let daemon = try RunningDaemon(directory: directory, extra: flags, waitUntilAnswering: false)
            var answeredAt: ContinuousClock.Instant?
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline, daemon.process.isRunning {
                let loaded = record.load()
                reads += 1
                if loaded != .restored(.suspended) { others.append("\(loaded)") }
                if let answeredAt {
                    if ContinuousClock.now - answeredAt > .seconds(1) { break }
                } else if reads % 50 == 0, (try? daemon.status()) != nil {
                    answeredAt = .now
                }
            }
            #expect(answeredAt != nil, "the daemon answered; \(daemon.logText)")
            #expect(try daemon.status().state == .suspended)
            daemon.kill9()
        }
        #expect(
            others.isEmpty, "\(others.count) of \(reads) reads found another record: \(Set(others).sorted())")
    }

    @Test(
        "with batch.capacity 100 the journal stays within twice that while suspended, however long", .timeLimit(.minutes(2)))
    func journalStaysBoundedWhileSuspended() throws {
        let directory = TemporaryDirectory()
        let journal = directory.file("held.journal")
        let config = directory.file("locationd.yaml")
        try "batch:\n  capacity: 100\n".write(toFile: config, atomically: true, encoding: .utf8)
        // Every fix held: one a second of track time, a thousand times faster than life.
        let daemon = try RunningDaemon(
            directory: directory,
            extra: ["--config", config, "--speed", "1000", "--loop", "--journal", journal,
                    "--reduced-interval", "0.1", "--background-location", "off"])
        _ = try daemon.ctl(["state", "suspended"])
        #expect(Self.waitUntil(60) { ((try? daemon.status().dropped) ?? 0) >= 1_000 }, "the batch dropped its oldest fixes")
        let records = try Self.readJournal(journal).locations.count
        #expect(records <= 2 * 100 + 16, "the journal holds \(records) records for a batch of 100")
        let status = try daemon.status()
        #expect(status.held == 100)
        // What it holds is what a restart loads.
        daemon.kill9()
        let restarted = try RunningDaemon(directory: directory, extra: ["--config", config, "--journal", journal])
        let restored = try restarted.status()
        #expect(restored.held == 100, "\(restored.held) held after the restart, \(restored.state); \(restarted.logText)")
    }

    @Test("an explicit --state overrides the saved state; a corrupt or stale record is ignored with one warning")
    func savedStatePrecedence() throws {
        let (directory, flags, record) = try Self.killedWhileSuspended()
        #expect(record.load() == .restored(.suspended))
        let journal = record.journalPath
        do {
            let daemon = try RunningDaemon(directory: directory, extra: flags + ["--state", "active"])
            #expect(try daemon.status().state == .active)
            #expect(daemon.logText.contains("starting active as --state asks; the saved state was suspended"))
            daemon.kill9()
        }
        #expect(record.load() == .restored(.active), "the overriding state is saved at start")

        try "{\"state\":\"susp".write(toFile: record.path, atomically: false, encoding: .utf8)
        do {
            let daemon = try RunningDaemon(directory: directory, extra: flags)
            #expect(try daemon.status().state == .active)
            let warnings = daemon.logText.split(separator: "\n").filter { $0.contains(record.path) }
            #expect(warnings.count == 1)
            #expect(warnings.first?.contains("is corrupt") == true && warnings.first?.contains("starting active") == true)
            daemon.kill9()
        }
        #expect(record.load() == .restored(.active), "a corrupt record is replaced")

        // Another file now sits at the journal's path: the record describes a journal that is gone.
        try record.save(.suspended)
        let moved = journal + ".old"
        try FileManager.default.copyItem(atPath: journal, toPath: moved)
        try FileManager.default.removeItem(atPath: journal)
        try FileManager.default.moveItem(atPath: moved, toPath: journal)
        do {
            let daemon = try RunningDaemon(directory: directory, extra: flags)
            #expect(try daemon.status().state == .active)
            #expect(daemon.logText.contains("the journal was replaced; starting active"))
        }
    }

    @Test("a journal cut keeps its valid prefix; corrupted mid-file, it keeps every good record; the daemon says once what it dropped")
    func damagedJournal() throws {
        for damage in ["cut", "corrupted"] {
            let directory = TemporaryDirectory()
            let path = directory.file("held.journal")
            let fixes = LocationFixtures.walk(count: 20)
            var ends: [Int] = []
            let (journal, _) = try LocationJournal.open(path: path)
            for fix in fixes {
                try journal.append(fix)
                ends.append(try Self.size(of: path))
            }
            journal.close()
            let damagedRecord = damage == "cut" ? 15 : 12
            let kept = damage == "cut" ? 15 : 19
            let recordStart = ends[damagedRecord - 1]
            var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            if damage == "cut" {
                bytes = bytes.prefix(recordStart + (ends[damagedRecord] - recordStart) / 2)
            } else {
                bytes[recordStart + 10] ^= 0xFF
            }
            try bytes.write(to: URL(fileURLWithPath: path))

            let daemon = try RunningDaemon(
                directory: directory, extra: Self.flags(journal: path) + ["--state", "suspended"])
            let lines = daemon.logText.split(separator: "\n").filter { $0.contains("journal \(path):") }
            #expect(lines.count == 1, "\(damage): \(daemon.logText)")
            if damage == "cut" {
                #expect(lines.first?.contains("at byte \(recordStart); kept \(kept) fixes, dropped \(bytes.count - recordStart) bytes") == true)
            } else {
                #expect(lines.first?.contains("checksum mismatch at byte \(recordStart); skipped \(ends[damagedRecord] - recordStart) damaged bytes in 1 place and kept 19 fixes") == true, "\(lines)")
                #expect(FileManager.default.fileExists(atPath: path + ".damaged"))
            }
            let status = try daemon.status()
            #expect(status.journalProblem?.contains("kept \(kept) fixes") == true)
            #expect(status.held >= kept)
            let text = try daemon.ctl(["status"])
            #expect(text.stdout.contains("(problem: journal \(path):"))

            let (batch, _) = try Self.foreground(daemon)
            let good = damage == "cut" ? Array(fixes.prefix(kept)) : fixes.enumerated().filter { $0.offset != damagedRecord }.map(\.element)
            let goodDelivered = Self.same(Array(batch.prefix(kept)), good)
            #expect(goodDelivered, "\(damage): every good record is delivered")
            #expect(batch.dropFirst(kept).allSatisfy { $0.timestamp > fixes.last!.timestamp }, "\(damage): nothing dropped comes back")
        }
    }

    // MARK: - Helpers

    /// The journal's fixes and problem, read from a copy (opening a journal repairs it, and the daemon may run).
    static func readJournal(_ path: String) throws -> LocationJournal.Contents {
        let copy = path + ".test-copy"
        try? FileManager.default.removeItem(atPath: copy)
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        defer { try? FileManager.default.removeItem(atPath: copy) }
        let (journal, contents) = try LocationJournal.open(path: copy)
        journal.close()
        return contents
    }

    /// Checks a journal found after a kill against the one before; returns 1 for a torn last record, else 0.
    static func check(
        _ found: LocationJournal.Contents, extends snapshot: inout [Location], held: Int, _ context: String
    ) throws -> Int {
        if let problem = found.problem {
            // A record being written at the instant of the kill may be cut; it was never reported held.
            #expect(problem.message.contains("truncated record"), "\(problem.message); \(context)")
        }
        #expect(found.locations.count >= held, "every fix reported held is journaled; \(context)")
        #expect(found.locations.count >= snapshot.count, "nothing journaled before is lost; \(context)")
        let grows = Self.same(Array(found.locations.prefix(snapshot.count)), snapshot)
        #expect(grows, "the journal only grows; \(context)")
        #expect(isIncreasing(found.locations), "fix times increase across restarts; \(context)")
        snapshot = found.locations
        return found.problem == nil ? 0 : 1
    }

    /// Connects a watcher, brings the daemon to the foreground, and returns the flushed batch and the live
    /// fixes that followed it (at least two).
    static func foreground(_ daemon: RunningDaemon) throws -> (batch: [Location], live: [Location]) {
        let watcher = try ControlClient(path: daemon.socket)
        _ = try watcher.request(.watch)
        let reply = try ControlClient.request(.state(set: "active"), path: daemon.socket)
        #expect(try reply.decode(String.self, forKey: "state") == "active")
        var sawBatch = false
        var batch: [Location] = []
        var live: [Location] = []
        var unbatched = 0
        let deadline = ContinuousClock.now + .seconds(30)
        while live.count < 2 {
            guard ContinuousClock.now < deadline, unbatched < 5 else {
                Issue.record("no batch on the foreground: \(unbatched) live fixes came first")
                break
            }
            let line = try watcher.readLine(timeout: .seconds(20), limit: ControlClient.maxEventLength)
            // The reply to the acknowledgement.
            if line.starts(with: Array(#"{"ok":"#.utf8)) { continue }
            let frame = try LocationEventDecoder.frame(line)
            switch frame.event {
            case .locations(let locations, .held):
                #expect(!sawBatch, "one batch")
                sawBatch = true
                batch = locations
                // Had whole: the consumer acknowledges it, and locationd lets go of it.
                if let id = frame.batchID { try watcher.send(.acknowledge(batch: id)) }
            case .locations(let locations, .live):
                if sawBatch { live += locations } else { unbatched += locations.count }
            default:
                break
            }
        }
        return (batch, live)
    }

    /// How many fixes the daemon said it loaded from its journal (0 when it said nothing).
    static func loadedCount(_ log: String) -> Int {
        for line in log.split(separator: "\n") where line.contains(/held fix(es)? from journal/) {
            if let range = line.range(of: "loaded ") {
                return Int(line[range.upperBound...].prefix { $0.isNumber }) ?? -1
            }
        }
        return 0
    }

    /// Whether fix times strictly increase.
    static func isIncreasing(_ locations: [Location]) -> Bool {
        zip(locations, locations.dropFirst()).allSatisfy { $0.timestamp < $1.timestamp }
    }

    /// Whether two lists hold the same fixes (times to the microsecond and positions to 1e-7°, as JSON keeps them).
    static func same(_ a: [Location], _ b: [Location]) -> Bool {
        a.count == b.count
            && zip(a, b).allSatisfy { x, y in
                abs(x.timestamp.timeIntervalSince(y.timestamp)) < 1e-6 && abs(x.latitude - y.latitude) < 1e-7
                    && abs(x.longitude - y.longitude) < 1e-7
            }
    }

    static func size(of path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }

    /// Polls `condition` every 20 ms for up to `seconds`.
    static func waitUntil(_ seconds: Double = 10, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }
}

extension Duration {
    /// The duration in whole microseconds.
    var microseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }
}
