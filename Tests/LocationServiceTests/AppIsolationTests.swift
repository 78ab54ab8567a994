import Foundation
import LocationControl
import LocationCore
import LocationService
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Users of one locationd are kept apart: each has apps of their own, within a quota, and learns nothing of
/// the others'; a daemon that cannot tell users apart refuses them rather than merging them.
@Suite("locationd keeps its users apart", .serialized)
struct AppIsolationTests {
    /// A daemon shared with the group `users`, and a copy of locationctl that nobody may run.
    static func sharedDaemon(environment: [String: String] = [:]) throws -> (RunningDaemon, ctl: String, gid: UInt32) {
        let group = try #require(SocketGroupTests.group)
        let daemon = try RunningDaemon(extra: ["--control-group", group.name], environment: environment)
        chmod(daemon.directory.path, 0o755)
        let ctl = daemon.directory.file("locationctl")
        try FileManager.default.copyItem(atPath: Tool.path("locationctl"), toPath: ctl)
        chmod(ctl, 0o755)
        return (daemon, ctl, group.gid)
    }

    @Test(
        "two users each have their own app of one name; neither reads, changes, lists or removes the other's, nor learns it exists",
        .enabled(if: getuid() == 0 && SocketGroupTests.group != nil, "switching users needs root, and the group users must exist"))
    func twoUsersEachHaveTheirOwnApp() throws {
        let (daemon, ctl, gid) = try Self.sharedDaemon()
        let nobody = { (arguments: [String]) throws -> ToolResult in
            try SocketGroupTests.asNobody([ctl] + arguments + ["--socket", daemon.socket], groups: [gid], in: daemon.directory)
        }
        #expect(try daemon.ctl(["state", "background", "--app", "logger"]).status == 0)

        // Reading an app of that name that nobody does not have: as if no such app existed anywhere.
        let read = try nobody(["status", "--app", "logger"])
        #expect(read.status == 66, "\(read.stderr)")
        #expect(read.stderr.contains("has no app logger"), "\(read.stderr)")
        #expect(!read.stderr.contains("root") && !read.stderr.contains("uid 0"), "nothing said about root's app: \(read.stderr)")

        // Setting a state makes nobody's own logger; root's stays as it was.
        let own = try nobody(["state", "active", "--app", "logger"])
        #expect(own.status == 0, "\(own.stderr)")
        #expect(try daemon.appStatus("logger").state == .suspended, "root's logger is untouched")
        #expect(try daemon.appStatus("logger").owner == 0)

        let listed = try nobody(["apps", "list", "--format", "json"])
        let theirs = try JSONDecoder().decode([DaemonStatus].self, from: Data(listed.stdout.utf8))
        #expect(theirs.map { "\($0.app ?? "?"):\($0.owner.map(String.init) ?? "-")" } == ["default:-", "logger:65534"], "\(listed.stdout)")
        #expect(theirs.allSatisfy { $0.apps == nil && $0.receiver == nil }, "no totals for a user: \(listed.stdout)")
        let all = try ControlClient.request(.apps, path: daemon.socket).decode([DaemonStatus].self, forKey: "apps")
        #expect(all.filter { $0.app == "logger" }.compactMap(\.owner) == [0, 65534], "root sees both")
        #expect(try daemon.status().apps == 3, "root sees the total")

        let foreign = try nobody(["apps", "remove", "logger", "--owner", "0"])
        #expect(foreign.status == 77, "\(foreign.stderr)")
        #expect(foreign.stderr.contains("only root may name another user's app"), "\(foreign.stderr)")
        let removed = try nobody(["apps", "remove", "logger"])
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(try daemon.listedStatus("logger")?.owner == 0, "root's logger is still there")
        #expect(try ControlClient.request(.apps, path: daemon.socket).decode([DaemonStatus].self, forKey: "apps")
            .filter { $0.app == "logger" }.count == 1)
        let files = daemon.directory.file("state/apps/65534")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: files)) ?? []).isEmpty, "its files are gone")
    }

    @Test(
        "a user may have apps.maxPerUser apps and no more, while others still open theirs; removing one makes room",
        .enabled(if: getuid() == 0 && SocketGroupTests.group != nil, "switching users needs root, and the group users must exist"))
    func perUserQuota() throws {
        let (daemon, ctl, gid) = try Self.sharedDaemon(environment: ["LOCATIOND_APPS_MAX_PER_USER": "3", "LOCATIOND_APPS_MAX": "5"])
        let nobody = { (arguments: [String]) throws -> ToolResult in
            try SocketGroupTests.asNobody([ctl] + arguments + ["--socket", daemon.socket], groups: [gid], in: daemon.directory)
        }
        for index in 1...3 {
            let result = try nobody(["state", "active", "--app", "mine\(index)"])
            #expect(result.status == 0, "\(index): \(result.stderr)")
        }
        let over = try nobody(["state", "active", "--app", "mine4"])
        #expect(over.status == 69, "\(over.stderr)")
        #expect(over.stderr.contains("already has 3 apps in locationd (apps.maxPerUser)"), "\(over.stderr)")
        #expect(over.stderr.split(separator: "\n").count == 1)
        #expect(try daemon.ctl(["state", "active", "--app", "rootapp"]).status == 0, "another user is not locked out")
        #expect(try nobody(["apps", "remove", "mine1"]).status == 0)
        let again = try nobody(["state", "active", "--app", "mine4"])
        #expect(again.status == 0, "room again: \(again.stderr)")
    }

    @Test("an app that is connected is not removed; the default app never is; removing an app ends its watchers' stream")
    func removeRefusals() throws {
        let daemon = try RunningDaemon()
        let attached = try AppConnection(socket: daemon.socket, app: "live", extra: #","attach":true"#)
        let busy = try daemon.ctl(["apps", "remove", "live"])
        #expect(busy.status == 69, "\(busy.stderr)")
        #expect(busy.stderr.contains("is connected to locationd"), "\(busy.stderr)")
        withExtendedLifetime(attached) {}

        let shared = try daemon.ctl(["apps", "remove", "default"])
        #expect(shared.status == 64, "\(shared.stderr)")
        let absent = try daemon.ctl(["apps", "remove", "never-was"])
        #expect(absent.status == 66, "an app that is not there is a missing input, not an unreachable daemon: \(absent.stderr)")
        #expect(absent.stderr.contains("has no app never-was"), "\(absent.stderr)")

        #expect(try daemon.ctl(["state", "active", "--app", "watched"]).status == 0)
        let (watcher, out, _) = try Tool.start(
            "locationctl", ["watch", "--app", "watched", "--format", "json", "--socket", daemon.socket], in: daemon.directory)
        #expect(eventually { ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").contains(#""type":"location""#) })
        #expect(try daemon.ctl(["apps", "remove", "watched"]).status == 0)
        #expect(eventually { !watcher.isRunning }, "the watch ends")
        let stream = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
        #expect(stream.contains("the app watched was removed"))
        #expect(!stream.contains("went away"), "the daemon did not go away: \(stream.suffix(500))")
        #expect(watcher.terminationStatus == 66, "the app is gone, as for an app locationd does not have; the daemon is there")
    }

    @Test(
        "one user's crowd of watchers takes at most a quarter of the connections: another user and root still get in",
        .enabled(if: getuid() == 0 && SocketGroupTests.group != nil, "switching users needs root, and the group users must exist"),
        .timeLimit(.minutes(1)))
    func oneUserCannotTakeEveryConnection() throws {
        let (daemon, ctl, gid) = try Self.sharedDaemon()
        // nobody opens 200 watchers and holds them until its standard input closes.
        let script = """
            import socket, sys
            held, refused = [], 0
            for _ in range(200):
                s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
                try:
                    s.sendall(b'{"command":"watch"}\\n'); reply = s.recv(4096)
                except OSError:
                    reply = b'too-many-connections'
                if b'too-many-connections' in reply: refused += 1; s.close()
                else: held.append(s)
            print(len(held), refused, flush=True)
            sys.stdin.read()
            """
        let crowd = Process()
        crowd.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        crowd.arguments = ["--reuid=65534", "--regid=65534", "--groups=\(gid)", "/usr/bin/python3", "-c", script, daemon.socket]
        let input = Pipe(), output = Pipe()
        crowd.standardInput = input
        crowd.standardOutput = output
        try crowd.run()
        defer {
            try? input.fileHandleForWriting.close()
            crowd.waitUntilExit()
        }
        var printed = ""
        for _ in 0..<100 where !printed.contains("\n") {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            printed += String(decoding: chunk, as: UTF8.self)
        }
        let counts = printed.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { Int($0) }
        #expect(counts == [128, 72], "512 connections, a quarter per user: \(printed)")
        let other = try Tool.run(
            ctl, ["status", "--socket", daemon.socket],
            launcher: ["/usr/bin/setpriv", "--reuid=1", "--regid=1", "--groups=\(gid)", "{}"], in: daemon.directory)
        #expect(other.status == 0, "another user gets in: \(other.stderr)")
        #expect(try daemon.ctl(["status"]).status == 0, "root gets in")
    }

    @Test("an app nobody uses is dropped after apps.keepAbandoned, with its files; one that is watched is kept", .timeLimit(.minutes(1)))
    func unusedAppsExpire() throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.file("state"), withIntermediateDirectories: true)
        let daemon = try RunningDaemon(
            directory: directory, extra: ["--journal", directory.file("state/held.journal")],
            environment: ["LOCATIOND_APPS_KEEP_ABANDONED": "2"])
        #expect(try daemon.ctl(["state", "background", "--app", "forgotten"]).status == 0)
        #expect(try daemon.ctl(["state", "background", "--app", "watched"]).status == 0)
        let watcher = try AppConnection(socket: daemon.socket, app: "watched")
        let files = directory.file("state/apps/\(getuid())")
        #expect(FileManager.default.fileExists(atPath: files + "/forgotten.journal"))
        #expect(try eventually(20) { try daemon.listedStatus("forgotten") == nil }, "dropped: \(daemon.logText.suffix(2000))")
        #expect(daemon.logText.contains("dropping the app forgotten of uid \(getuid()), unused for"), "\(daemon.logText.suffix(2000))")
        #expect(!FileManager.default.fileExists(atPath: files + "/forgotten.journal"))
        #expect(try daemon.listedStatus("watched") != nil, "the watched app stays")
        withExtendedLifetime(watcher) {}
    }

    @Test(
        "under the unit's old mapping (a user namespace mapping only root and the socket group) a member is refused in one line, 77, not merged with every other member",
        .enabled(if: getuid() == 0 && SocketGroupTests.group != nil, "writing a namespace's maps needs root, and the group users must exist"),
        .timeLimit(.minutes(1)))
    func unmappedPeersAreRefused() throws {
        let group = try #require(SocketGroupTests.group)
        let directory = TemporaryDirectory()
        chmod(directory.path, 0o755)
        let ctl = directory.file("locationctl")
        try FileManager.default.copyItem(atPath: Tool.path("locationctl"), toPath: ctl)
        chmod(ctl, 0o755)
        let socket = directory.file("run/control.sock")
        let track = try directory.track(count: 3600)
        let daemon = try NamespacedProcess(
            Tool.path("locationd"),
            ["--replay", track, "--speed", "10", "--socket", socket, "--control-group", group.name],
            gidMap: "0 0 1\n\(group.gid) \(group.gid) 1\n", in: directory)
        #expect(eventually { (try? ControlClient.request(.state(set: nil), path: socket, timeout: .seconds(2))) != nil }, "\(daemon.log)")

        let member = try SocketGroupTests.asNobody([ctl, "state", "background", "--app", "mine", "--socket", socket], groups: [group.gid], in: directory)
        #expect(member.status == 77, "\(member.stderr)")
        #expect(member.stderr.contains("cannot tell which user you are"), "\(member.stderr)")
        #expect(member.stderr.split(separator: "\n").count == 1)
        let status = try SocketGroupTests.asNobody([ctl, "status", "--socket", socket], groups: [group.gid], in: directory)
        #expect(status.status == 77, "even the shared app is refused: \(status.stderr)")
        // Root is mapped, and served.
        #expect(try Tool.run("locationctl", ["status", "--socket", socket], in: directory).status == 0)
    }
}

extension AppIsolationTests {
    @Test("a journal directory others may write (sticky, as /tmp, or not) is refused at start: 73, one line, nothing created")
    func sharedJournalDirectoryIsRefused() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 5)
        for mode: mode_t in [0o1777, 0o777, 0o775] {
            let shared = directory.file("shared-\(String(mode, radix: 8))")
            #expect(mkdir(shared, 0o700) == 0 && chmod(shared, mode) == 0)
            let result = try Tool.run(
                "locationd", ["--replay", track, "--socket", directory.file("run/c.sock"), "--journal", shared + "/held.journal"],
                timeout: 30, in: directory)
            #expect(result.status == 73, "\(String(mode, radix: 8)): \(result.stderr)")
            #expect(result.stderr.contains("may be written by other users"), "\(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
            #expect(((try? FileManager.default.contentsOfDirectory(atPath: shared)) ?? ["?"]).isEmpty)
        }
    }

    @Test(
        "an apps directory that is a link, or another user's, is never written through: the open fails naming it, and the link's target stays empty",
        .enabled(if: getuid() == 0, "giving a directory to another user needs root"))
    func plantedAppDirectoriesAreRefused() throws {
        let directory = TemporaryDirectory()
        let state = directory.file("state")
        #expect(mkdir(state, 0o700) == 0)
        let target = directory.file("elsewhere")
        #expect(mkdir(target, 0o700) == 0)
        #expect(mkdir(state + "/apps", 0o700) == 0)
        #expect(symlink(target, state + "/apps/\(getuid())") == 0)
        let daemon = try RunningDaemon(directory: directory, extra: ["--journal", state + "/held.journal"])
        let linked = try daemon.ctl(["state", "background", "--app", "pwn"])
        #expect(linked.status == 73, "\(linked.stderr)")
        #expect(linked.stderr.contains("is not a directory (a link?)"), "\(linked.stderr)")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: target)) ?? ["?"]).isEmpty, "nothing written through the link")

        // The same name as a directory of another user's, or one others may enter.
        unlink(state + "/apps/\(getuid())")
        #expect(mkdir(state + "/apps/\(getuid())", 0o700) == 0 && chown(state + "/apps/\(getuid())", 65534, 65534) == 0)
        let foreign = try daemon.ctl(["state", "background", "--app", "pwn"])
        #expect(foreign.status == 73, "\(foreign.stderr)")
        #expect(foreign.stderr.contains("belongs to uid 65534"), "\(foreign.stderr)")
        #expect(chown(state + "/apps/\(getuid())", getuid(), getgid()) == 0 && chmod(state + "/apps/\(getuid())", 0o755) == 0)
        let open = try daemon.ctl(["state", "background", "--app", "pwn"])
        #expect(open.status == 73, "\(open.stderr)")
        #expect(open.stderr.contains("may be used by other users (mode 755)"), "\(open.stderr)")
        #expect(chmod(state + "/apps/\(getuid())", 0o700) == 0)
        #expect(try daemon.ctl(["state", "background", "--app", "pwn"]).status == 0, "a private directory of its own is used")
    }
}

extension AppIsolationTests {
    @Test(
        "a journal directory or journal of another user, a lock file that is a hard link, are refused at start (73) and left as they were",
        .enabled(if: getuid() == 0, "giving files to another user needs root"))
    func foreignJournalFilesAreRefused() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 5)
        let start = { (journal: String) throws -> ToolResult in
            try Tool.run("locationd", ["--replay", track, "--socket", directory.file("run/c.sock"), "--journal", journal], timeout: 30, in: directory)
        }
        let theirs = directory.file("theirs")
        #expect(mkdir(theirs, 0o700) == 0 && chown(theirs, 65534, 65534) == 0)
        let inTheirs = try start(theirs + "/held.journal")
        #expect(inTheirs.status == 73, "\(inTheirs.stderr)")
        #expect(inTheirs.stderr.contains("belongs to uid 65534"), "\(inTheirs.stderr)")

        let mine = directory.file("mine")
        #expect(mkdir(mine, 0o700) == 0)
        #expect(FileManager.default.createFile(atPath: mine + "/held.journal", contents: Data()) && chown(mine + "/held.journal", 65534, 65534) == 0)
        let foreignFile = try start(mine + "/held.journal")
        #expect(foreignFile.status == 73, "\(foreignFile.stderr)")
        #expect(foreignFile.stderr.contains("the journal \(mine)/held.journal belongs to uid 65534"), "\(foreignFile.stderr)")
        unlink(mine + "/held.journal")

        let victim = directory.file("victim")
        try Data("precious\n".utf8).write(to: URL(fileURLWithPath: victim))
        #expect(link(victim, mine + "/held.journal.lock") == 0)
        let linked = try start(mine + "/held.journal")
        #expect(linked.status == 73, "\(linked.stderr)")
        #expect(linked.stderr.contains("is not a regular file of its own"), "\(linked.stderr)")
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious\n", "the linked file is untouched")
    }

    @Test("a restart restores only apps under plain uid directories, and a new app never takes up what a cut-short removal left")
    func leftoversAreNotRestored() throws {
        let directory = TemporaryDirectory()
        let state = directory.file("state")
        #expect(mkdir(state, 0o700) == 0)
        let journal = state + "/held.journal"
        let first = try RunningDaemon(directory: directory, extra: ["--journal", journal])
        #expect(try first.ctl(["state", "suspended", "--app", "ob"]).status == 0)
        #expect(try eventually(20) { try first.appStatus("ob").held > 0 })
        // Back in the foreground with nobody watching: the batch waits in the outbox, unacknowledged.
        #expect(try first.ctl(["state", "active", "--app", "ob"]).status == 0)
        #expect(try eventually(20) { try first.appStatus("ob").unacknowledged ?? 0 > 0 })
        first.kill9()
        let apps = state + "/apps/\(getuid())"
        // What a removal cut short by kill -9 leaves: the journal gone, the rest still there.
        unlink(apps + "/ob.journal")
        #expect(FileManager.default.fileExists(atPath: apps + "/ob.journal.outbox"))
        // A uid directory that is not written as the daemon writes it: a copy of the app under "0" + uid.
        let odd = state + "/apps/0\(getuid())"
        #expect(mkdir(odd, 0o700) == 0)
        #expect(FileManager.default.createFile(atPath: odd + "/planted.journal", contents: Data()))
        let second = try RunningDaemon(directory: directory, extra: ["--journal", journal])
        let listed = try ControlClient.request(.apps, path: second.socket).decode([DaemonStatus].self, forKey: "apps").compactMap(\.app)
        #expect(listed == ["default"], "\(listed)")
        #expect(try second.ctl(["state", "active", "--app", "ob"]).status == 0)
        let fresh = try second.appStatus("ob")
        #expect(fresh.held == 0 && fresh.unacknowledged == 0, "nothing of the removed app: \(fresh)")
    }

    @Test("replay refuses a device such as /dev/zero at once: 66, one line")
    func replayRefusesDevices() throws {
        let directory = TemporaryDirectory()
        let result = try Tool.run("locationctl", ["replay", "/dev/zero", "--fast"], timeout: 30, in: directory)
        #expect(result.status == 66, "\(result.stderr)")
        #expect(result.stderr == "locationctl: /dev/zero: is a device, not a GPX file\n", "\(result.stderr)")
    }
}

/// A program in a user namespace of its own whose maps the test writes: uid 0 alone, and `gidMap`.
final class NamespacedProcess: Sendable {
    let process: Process
    let logPath: String

    init(_ program: String, _ arguments: [String], gidMap: String, in directory: TemporaryDirectory) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        // The shell waits for a line, which comes once the maps are written, then becomes the program.
        process.arguments = ["--user", "--", "/bin/sh", "-c", "read ready && exec \"$@\"", "sh", program] + arguments
        let input = Pipe()
        process.standardInput = input
        logPath = directory.file("namespaced-\(UUID().uuidString).err")
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        process.standardError = FileHandle(forWritingAtPath: logPath)
        process.standardOutput = FileHandle.nullDevice
        process.currentDirectoryURL = URL(fileURLWithPath: directory.path)
        try process.run()
        self.process = process
        let pid = process.processIdentifier
        // The namespace exists once unshare has run the shell: its uid_map is then writable, once.
        var written = false
        for _ in 0..<500 where !written {
            written = (try? "0 0 1\n".write(toFile: "/proc/\(pid)/uid_map", atomically: false, encoding: .utf8)) != nil
            if !written { usleep(10_000) }
        }
        guard written else { throw LocationError(.sourceUnavailable, "could not write the namespace's uid_map") }
        try gidMap.write(toFile: "/proc/\(pid)/gid_map", atomically: false, encoding: .utf8)
        input.fileHandleForWriting.write(Data("go\n".utf8))
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }
}
