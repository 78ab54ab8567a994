import Foundation
import LocationControl
import LocationCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("locationd delivers a held batch whole, to a watcher that is not reading too", .serialized)
struct HeldBatchDeliveryTests {
    @Test("a held batch of thousands of fixes reaches a watcher stopped during the flush whole and in order")
    func aBatchLargerThanTheBufferArrivesWholeToAStoppedWatcher() throws {
        // A fix a second of track time played 1000 times faster, one held per 0.1 s of track time: every fix is
        // held, about a thousand a second of wall time.
        let daemon = try RunningDaemon(
            points: 40_000,
            extra: ["--speed", "1000", "--reduced-interval", "0.1", "--background-location", "off"])
        let (watcher, out, _) = try Tool.start(
            "locationctl", ["watch", "--socket", daemon.socket, "--format", "json"], in: daemon.directory)
        defer { if watcher.isRunning { kill(watcher.processIdentifier, SIGKILL) } }
        try daemon.waitForWatchers(1)
        #expect(try daemon.ctl(["state", "background"]).stdout.hasPrefix("suspended"))

        // Well over the watcher's 1 MiB buffer: each location line is about 250 bytes.
        let wanted = 6_000
        var held = 0
        let deadline = ContinuousClock.now + .seconds(60)
        while held < wanted, ContinuousClock.now < deadline {
            usleep(100_000)
            held = try daemon.status().held
        }
        try #require(held >= wanted, "the suspended daemon held \(held) fixes in 60 s")

        // The watcher's reader stops; the flush happens; it reads again only once the batch is long sent.
        kill(watcher.processIdentifier, SIGSTOP)
        #expect(try daemon.ctl(["state", "active"]).status == 0)
        #expect(eventually(20) { (try? daemon.status().held) == 0 }, "the batch was flushed")
        // Live fixes keep coming at a thousand a second meanwhile, filling the stopped watcher's buffer.
        usleep(1_500_000)
        kill(watcher.processIdentifier, SIGCONT)

        func lines() -> [String] {
            let text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").dropLast(text.hasSuffix("\n") ? 0 : 1).map(String.init)
        }
        let arrived = eventually(30) {
            ((try? jsonObjects(lines())) ?? []).contains { $0["type"] as? String == "batch" }
        }
        kill(watcher.processIdentifier, SIGINT)
        #expect(eventually(10) { !watcher.isRunning }, "SIGINT ended the watch")
        try #require(arrived, "the watcher wrote the batch line")

        let objects = try jsonObjects(lines())
        let index = try #require(objects.firstIndex { $0["type"] as? String == "batch" })
        let count = try #require(objects[index]["count"] as? Int)
        #expect(count >= held, "the batch has every fix held before the flush: \(count) of \(held)")
        let delivered = try #require(objects[index]["locations"] as? [[String: Any]])
        #expect(delivered.count == count, "the batch line holds its \(count) locations")
        let times = delivered.compactMap { ($0["timestamp"] as? String).flatMap(RFC3339.parse)?.date }
        #expect(times.count == count)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "oldest first, none twice")
        // Whatever the stopped watcher missed of the live stream afterwards is said, never hidden in the batch.
        let lagged = objects[(index + 1)...].contains { ($0["code"] as? String) == "watcher-lagged" }
        print("held batch to a stopped watcher: \(count) fixes arrived whole; live fixes missed after it: \(lagged)")
    }

    /// A batch as a watcher read it.
    struct ReadBatch {
        var count: Int
        var id: String?
        var reason: String?
        var times: [Date] = []
    }

    /// The next line from a watching client as a JSON object; `nil` when none came within 2 s.
    static func nextObject(_ client: ControlClient) throws -> [String: Any]? {
        let line: [UInt8]
        do {
            line = try client.readLine(timeout: .seconds(2))
        } catch {
            if error.code == .timeout { return nil }
            throw error
        }
        return try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any]
    }

    /// Reads a batch line from a watching client; `nil` after 20 s without one.
    static func readBatch(_ client: ControlClient) throws -> ReadBatch? {
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            guard let object = try nextObject(client) else { continue }
            guard object["type"] as? String == "batch", let count = object["count"] as? Int else { continue }
            if object["records"] is String {
                // Journal records (a watcher that asked for them): read as the Swift client reads them.
                let line = try JSONSerialization.data(withJSONObject: object)
                guard case .locations(let locations, .held)? = try LocationEventDecoder.frameIfKnown(Array(line))?.event else { return nil }
                return ReadBatch(
                    count: count, id: object["id"] as? String, reason: object["reason"] as? String, times: locations.map(\.timestamp))
            }
            let locations = object["locations"] as? [[String: Any]] ?? []
            return ReadBatch(
                count: count, id: object["id"] as? String, reason: object["reason"] as? String,
                times: locations.compactMap { ($0["timestamp"] as? String).flatMap(RFC3339.parse)?.date })
        }
        return nil
    }

    @Test(
        "a flushed batch stays in locationd, across a kill -9, until a consumer acknowledges it; then it is gone",
        .timeLimit(.minutes(2)))
    func aBatchStaysUntilAcknowledged() throws {
        let directory = TemporaryDirectory()
        let flags = DaemonCrashTests.flags(journal: directory.file("held.journal"))
        var daemon = try RunningDaemon(directory: directory, extra: flags)
        _ = try daemon.ctl(["state", "suspended"])
        #expect(eventually(30) { ((try? daemon.status().held) ?? 0) >= 10 }, "the suspended daemon holds fixes")

        // A watcher that never acknowledges (a plain socket client) gets the batch with an id, and goes; one
        // beside it that asked for journal records gets the same fixes with the same id.
        do {
            let watcher = try ControlClient(path: daemon.socket)
            _ = try watcher.request(.watch)
            let recordsWatcher = try ControlClient(path: daemon.socket)
            _ = try recordsWatcher.request(.watch(batches: .records))
            _ = try daemon.ctl(["state", "active"])
            let batch = try #require(try Self.readBatch(watcher))
            #expect(batch.times.count == batch.count && batch.count >= 10)
            #expect(batch.id != nil, "a batch from locationd has an id to acknowledge it by")
            let records = try #require(try Self.readBatch(recordsWatcher))
            // The JSON carries milliseconds (and `time`, which this reader leaves), the records the exact time.
            let milliseconds = { (times: [Date]) in times.map { ($0.timeIntervalSince1970 * 1000).rounded() } }
            #expect(milliseconds(records.times) == milliseconds(batch.times) && records.id == batch.id && records.reason == batch.reason)
            watcher.close()
            recordsWatcher.close()
        }
        let status = try daemon.status()
        #expect(status.held == 0, "the manager flushed it")
        let waiting = try #require(status.unacknowledged)
        #expect(waiting >= 10, "but nobody acknowledged it, so locationd keeps it: \(waiting)")

        // Killed and restarted: still there, and the next watcher gets it first, whole.
        daemon.kill9()
        daemon = try RunningDaemon(directory: directory, extra: flags)
        #expect(try daemon.status().unacknowledged == waiting, "the outbox survived kill -9")
        let consumer = try ControlClient(path: daemon.socket)
        _ = try consumer.request(.watch(batches: .records))
        let again = try #require(try Self.readBatch(consumer))
        #expect(again.count == waiting && again.times.count == waiting, "the waiting batch, whole")
        #expect(again.reason == "unacknowledged")
        #expect(zip(again.times, again.times.dropFirst()).allSatisfy { $0 < $1 }, "oldest first, none twice")

        // An id never handed out names no batch, even within the outbox's range or spelled another way.
        let handedOut = try #require(again.id)
        let (run, end) = (handedOut.split(separator: ".")[0], try #require(Int(handedOut.split(separator: ".")[1])))
        for bogus in ["\(run).0\(end)", "\(run).+\(end)", "\(run).\(end - 1)"] {
            do {
                _ = try ControlClient.request(.acknowledge(batch: bogus), path: daemon.socket)
                Issue.record("\(bogus) was taken")
            } catch {
                #expect(error.code.rawValue == "no-such-batch", "\(bogus): \(error)")
            }
        }
        #expect(try daemon.status().unacknowledged == waiting, "nothing was removed")
        // An id from before the restart removes nothing; the batch's own id removes it all.
        do {
            _ = try ControlClient.request(.acknowledge(batch: "0.\(waiting)"), path: daemon.socket)
            Issue.record("an id of another run was taken")
        } catch {
            #expect(error.code.rawValue == "no-such-batch", "\(error)")
        }
        try consumer.send(.acknowledge(batch: try #require(again.id)))
        #expect(eventually(10) { (try? daemon.status().unacknowledged) == 0 }, "acknowledged: gone")
        daemon.kill9()
        daemon = try RunningDaemon(directory: directory, extra: flags)
        #expect(try daemon.status().unacknowledged == 0, "and gone for good")
        #expect(try daemon.status().held == 0)
    }

    @Test(
        "after an ack of an earlier batch, the next watchers get what still waits, its count true, in both encodings",
        .timeLimit(.minutes(2)))
    func aPartialAckLeavesABatchWhoseCountIsTrue() throws {
        let directory = TemporaryDirectory()
        let daemon = try RunningDaemon(directory: directory, extra: DaemonCrashTests.flags(journal: directory.file("held.journal")))
        // Two flushes with nobody acknowledging: the outbox holds both, and the second id names them together.
        var ids: [String] = []
        var counts: [Int] = []
        for _ in 0..<2 {
            let before = (try? daemon.status().unacknowledged) ?? 0
            _ = try daemon.ctl(["state", "suspended"])
            #expect(eventually(30) { ((try? daemon.status().held) ?? 0) >= 3 }, "the suspended daemon holds fixes")
            _ = try daemon.ctl(["state", "active"])
            #expect(eventually(20) { ((try? daemon.status().unacknowledged) ?? 0) > before }, "flushed into the outbox")
            // Watchers in both encodings, so that the daemon has each encoding of what waits.
            for encoding in HeldBatchEncoding.allCases {
                let watcher = try ControlClient(path: daemon.socket)
                _ = try watcher.request(.watch(batches: encoding))
                let batch = try #require(try Self.readBatch(watcher))
                #expect(batch.times.count == batch.count)
                if encoding == .locations {
                    ids.append(try #require(batch.id))
                    counts.append(batch.count)
                }
                watcher.close()
            }
        }
        try #require(counts.count == 2 && counts[1] > counts[0], "\(counts)")
        // The first batch acknowledged: its fixes leave, the second id stays and names fewer fixes now.
        let reply = try ControlClient.request(.acknowledge(batch: ids[0]), path: daemon.socket)
        #expect(try reply.decode(Int.self, forKey: "acknowledged") == counts[0])
        let waiting = try #require(try daemon.status().unacknowledged)
        for encoding in HeldBatchEncoding.allCases {
            let watcher = try ControlClient(path: daemon.socket)
            _ = try watcher.request(.watch(batches: encoding))
            let batch = try #require(try Self.readBatch(watcher), "\(encoding): a batch that reads")
            #expect(batch.count == waiting && batch.times.count == waiting, "\(encoding): count \(batch.count), \(batch.times.count) fixes, \(waiting) waiting")
            watcher.close()
        }
    }

    @Test(
        "a batch flushed with nobody watching comes to the first watcher with the reason of its flush, and again as unacknowledged",
        .timeLimit(.minutes(2)))
    func aBatchFlushedUnwatchedKeepsItsReason() throws {
        let directory = TemporaryDirectory()
        let daemon = try RunningDaemon(directory: directory, extra: DaemonCrashTests.flags(journal: directory.file("held.journal")))
        _ = try daemon.ctl(["state", "suspended"])
        #expect(eventually(30) { ((try? daemon.status().held) ?? 0) >= 3 }, "the suspended daemon holds fixes")
        _ = try daemon.ctl(["state", "active"])
        #expect(eventually(20) { ((try? daemon.status().unacknowledged) ?? 0) >= 3 }, "flushed into the outbox")
        for expected in ["foreground", "unacknowledged"] {
            let watcher = try ControlClient(path: daemon.socket)
            _ = try watcher.request(.watch)
            let batch = try #require(try Self.readBatch(watcher))
            #expect(batch.reason == expected, "\(String(describing: batch.reason))")
            watcher.close()
        }
    }

    @Test("locationctl watch acknowledges a batch once it has written it", .timeLimit(.minutes(2)))
    func watchAcknowledgesWhatItWrote() throws {
        let directory = TemporaryDirectory()
        let flags = DaemonCrashTests.flags(journal: directory.file("held.journal"))
        let daemon = try RunningDaemon(directory: directory, extra: flags)
        _ = try daemon.ctl(["state", "suspended"])
        #expect(eventually(30) { ((try? daemon.status().held) ?? 0) >= 5 })
        let (watcher, out, _) = try Tool.start(
            "locationctl", ["watch", "--socket", daemon.socket, "--format", "json"], in: daemon.directory)
        defer { if watcher.isRunning { kill(watcher.processIdentifier, SIGKILL) } }
        try daemon.waitForWatchers(1)
        _ = try daemon.ctl(["state", "active"])
        #expect(eventually(20) { ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").contains(#""type":"batch""#) })
        #expect(eventually(20) { (try? daemon.status().unacknowledged) == 0 }, "the batch was acknowledged")
        let text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
        #expect(!text.contains(#""ok":"#), "the replies to its acknowledgements are not written out")
        kill(watcher.processIdentifier, SIGINT)
        #expect(eventually(10) { !watcher.isRunning })

        // A watch whose --count a batch would pass leaves the batch in locationd, says so, and counts live
        // fixes: nothing of the batch is written (it would come again to the next watcher) or acknowledged.
        _ = try daemon.ctl(["state", "suspended"])
        #expect(eventually(30) { ((try? daemon.status().held) ?? 0) >= 5 })
        let (counted, countedOut, _) = try Tool.start(
            "locationctl", ["watch", "--socket", daemon.socket, "--format", "json", "--count", "2"], in: daemon.directory)
        defer { if counted.isRunning { kill(counted.processIdentifier, SIGKILL) } }
        try daemon.waitForWatchers(1)
        _ = try daemon.ctl(["state", "active"])
        #expect(eventually(20) { !counted.isRunning }, "--count 2 ended the watch")
        let waiting = try daemon.status().unacknowledged ?? 0
        #expect(waiting >= 5, "a batch --count would cut is not acknowledged: \(waiting) waiting")
        let written = try jsonObjects(
            try String(contentsOfFile: countedOut, encoding: .utf8).split(separator: "\n").map(String.init))
        #expect(!written.contains { $0["type"] as? String == "batch" }, "no part of the batch was written")
        #expect(written.filter { $0["type"] as? String == "location" }.count == 2, "two live fixes")
        #expect(written.contains { $0["code"] as? String == "batch-left" }, "the batch left waiting is said: \(written)")

        // A watch whose --count the batch's last fix reaches acknowledges it before it ends.
        let whole = try Tool.run(
            "locationctl", ["watch", "--socket", daemon.socket, "--format", "json", "--count", "\(waiting)"],
            timeout: 30, in: daemon.directory)
        #expect(whole.status == 0, "\(whole.stderr)")
        #expect(eventually(10) { (try? daemon.status().unacknowledged) == 0 }, "the batch written whole was acknowledged")
    }

    /// The fix times (seconds since 1970, to the millisecond) of every batch's fixes a watching client gets
    /// until it has been quiet for 300 ms.
    static func drainBatchTimes(_ client: ControlClient) throws -> [Double] {
        var times: [Double] = []
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            let line: [UInt8]
            do {
                line = try client.readLine(timeout: .milliseconds(300))
            } catch {
                if error.code == .timeout { break }
                throw error
            }
            guard let object = try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any] else { continue }
            guard object["type"] as? String == "batch" else { continue }
            for location in object["locations"] as? [[String: Any]] ?? [] {
                if let date = (location["timestamp"] as? String).flatMap(RFC3339.parse)?.date {
                    times.append((date.timeIntervalSince1970 * 1000).rounded() / 1000)
                }
            }
        }
        return times
    }

    @Test(
        "the Swift client gets a 70,000-fix batch locationd held while the app was gone, with the app stopped 4 s as it comes: every held fix, in one delivery, in order, acknowledged",
        .timeLimit(.minutes(3)), .sanitizerExclusion("LocationServiceTests.HeldBatchDeliveryTests/theSwiftClientGetsALargeBatchWhole()"))
    func theSwiftClientGetsALargeBatchWhole() throws {
        // 160,000 points a second apart, played 50,000 times faster; each background acquisition ends at its
        // 0.1 s timeout (a GPX point has no accuracy to meet), so about every other point is held.
        let daemon = try RunningDaemon(
            points: 160_000, extra: ["--speed", "50000", "--reduced-interval", "1"],
            environment: ["LOCATIOND_REDUCED_ACQUISITION_TIMEOUT": "0.1"])
        // The app attaches and goes at once: from then on locationd holds its fixes, until the replay ends.
        var first: AppConnection? = try AppConnection(socket: daemon.socket, app: "tracker", extra: #","attach":true"#, watch: false)
        _ = first
        first = nil
        var held = 0, steady = 0
        let deadline = ContinuousClock.now + .seconds(60)
        while steady < 3, ContinuousClock.now < deadline {
            usleep(200_000)
            let now = try daemon.appStatus("tracker").held
            steady = now == held ? steady + 1 : 0
            held = now
        }
        try #require(held >= 70_000, "locationd held \(held) fixes for the gone app")

        let app = try LocationdAppProcess(socket: daemon.socket, app: "tracker", in: daemon.directory)
        // Stopped while the batch comes: the daemon must neither drop nor split it for a reader that is not reading.
        kill(app.process.processIdentifier, SIGSTOP)
        usleep(4_000_000)
        kill(app.process.processIdentifier, SIGCONT)
        #expect(eventually(60) { app.locations(kind: "held-restored").count >= held }, "the batch arrived")
        let batches = app.output.split(separator: "\n").filter { $0.contains(#""kind":"held-"#) }
        #expect(batches.count == 1, "one delivery, not \(batches.count)")
        let times = app.locations(kind: "held-restored")
        #expect(times.count == held, "exactly the held fixes: \(times.count) of \(held)")
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "oldest first, none twice")
        #expect(app.locations(kind: "live").allSatisfy { $0 > (times.last ?? 0) }, "no live fix in the batch or before it")
        #expect(try eventually { try daemon.appStatus("tracker").unacknowledged == 0 }, "acknowledged once the delegate had it")
        app.send("quit")
    }

    @Test(
        "an app killed at any moment after asking for the foreground loses no held fix: each reaches its delegate in that run or the next",
        .timeLimit(.minutes(3)))
    func anAppKilledDuringTheFlushLosesNothing() throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.file("state"), withIntermediateDirectories: true)
        let extra = ["--journal", directory.file("state/journal"), "--reduced-interval", "1"]
        let daemon = try RunningDaemon(directory: directory, extra: extra, environment: MultiAppDaemonTests.quickAcquisitions)
        // Sees every batch flushed for the app, and never acknowledges one.
        let observer = try ControlClient(path: daemon.socket)
        _ = try observer.request(.open(app: "tracker"))
        _ = try observer.request(.watch)
        // What locationd held for the app while it was gone (between its runs), as the observer saw it flushed.
        var flushed = Set<Double>()
        // Every held fix that reached a delegate, in any run, and how many the app held as it asked for the
        // foreground in each run (its own manager holds while it is suspended, journaled).
        var reached = Set<Double>()
        var heldByApp = Set<Double>()
        // Kill delays after the foreground request, in milliseconds: before, during and after the flush.
        for delay in [0, 2, 5, 20, 80] {
            let app = try LocationdAppProcess(socket: daemon.socket, app: "tracker", in: directory)
            app.send("active")
            // What its journal restored is delivered in the foreground first: counted again below, it would
            // be counted in two rounds (a set of reached fixes counts it once).
            #expect(eventually { app.held() == 0 }, "the restored batch delivered; delay \(delay)")
            app.send("suspended")
            // What the app holds once suspended: fixes it held in this run only (what its journal restored was
            // delivered when it became active, and is counted where it was first held).
            var heldNow: [Double] = []
            #expect(eventually { heldNow = app.heldTimes() ?? []; return heldNow.count >= 3 }, "held by the app; delay \(delay)")
            app.send("active")
            usleep(UInt32(delay * 1000))
            app.kill9()
            heldByApp.formUnion(heldNow)
            let delivered = app.heldLocations()
            // Fixes its journal restored, and locationd handed over again unacknowledged, go to it once.
            #expect(Set(delivered).count == delivered.count, "no held fix delivered twice in one run; delay \(delay)")
            reached.formUnion(delivered)
            flushed.formUnion(try Self.drainBatchTimes(observer))
        }
        // The next run of the app gets everything not yet delivered: from its journal and from locationd.
        let last = try LocationdAppProcess(socket: daemon.socket, app: "tracker", in: directory)
        last.send("active")
        #expect(try eventually { let status = try daemon.appStatus("tracker"); return status.held == 0 && status.unacknowledged == 0 })
        #expect(eventually { last.held() == 0 }, "the last run delivered what its journal held")
        // Once the app has stopped its updates and exited, its delegate has printed everything it had, the
        // session is quiet, and the observer has seen every batch.
        last.send("quit")
        #expect(eventually { !last.process.isRunning })
        let batch = last.heldLocations()
        #expect(zip(batch, batch.dropFirst()).allSatisfy { $0 < $1 }, "oldest first, none twice in one delivery")
        reached.formUnion(batch)
        flushed.formUnion(try Self.drainBatchTimes(observer))
        let lost = flushed.subtracting(reached)
        #expect(heldByApp.count >= 5, "the app held something: \(heldByApp.count)")
        let unreached = heldByApp.subtracting(reached)
        #expect(unreached.isEmpty, "\(unreached.count) of \(heldByApp.count) fixes the app held reached no delegate: \(unreached.sorted().prefix(5))")
        #expect(lost.isEmpty, "\(lost.count) of \(flushed.count) fixes locationd held reached no delegate: \(lost.sorted().prefix(5))")
        print("app killed during its flush: \(reached.count) held fixes reached a delegate (\(heldByApp.count) held by the app, \(flushed.count) by locationd); \(batch.count) in the last run")
    }
}
