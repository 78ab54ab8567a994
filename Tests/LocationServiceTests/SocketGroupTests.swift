import Foundation
import LocationControl
import LocationCore
import LocationService
import Testing
import locationd
import locationctl

#if canImport(Glibc)
import Glibc
#endif

/// The control socket shared with a group (`--control-group`, `control.group`).
@Suite("locationd's socket group", .serialized)
struct SocketGroupTests {
    /// A group every Debian system has, so that messages can name it.
    static let group = getgrnam("users").map { (name: String(cString: $0.pointee.gr_name), gid: $0.pointee.gr_gid) }

    /// Runs `command` as nobody, with `groups` as its only supplementary groups.
    static func asNobody(_ command: [String], groups: [UInt32], in directory: TemporaryDirectory) throws -> ToolResult {
        let groupsArgument = groups.isEmpty ? "--clear-groups" : "--groups=" + groups.map(String.init).joined(separator: ",")
        let launcher = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", groupsArgument, "{}"]
        return try Tool.run(command[0], Array(command.dropFirst()), launcher: launcher, timeout: 20, in: directory)
    }

    @Test(
        "with --control-group the socket is 0660 in a 0750 directory of that group: a member may use it, anyone else gets 77 naming the group",
        .enabled(if: getuid() == 0 && group != nil, "switching users needs root, and the group users must exist"))
    func membersOnly() throws {
        let group = try #require(Self.group)
        let daemon = try RunningDaemon(extra: ["--control-group", group.name])
        chmod(daemon.directory.path, 0o755)
        let ctl = daemon.directory.file("locationctl")
        try FileManager.default.copyItem(atPath: Tool.path("locationctl"), toPath: ctl)
        chmod(ctl, 0o755)

        var info = stat()
        #expect(stat(daemon.socket, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o660)
        #expect(info.st_gid == group.gid)
        #expect(stat(daemon.directory.file("run"), &info) == 0)
        #expect(info.st_mode & 0o777 == 0o750)
        #expect(info.st_gid == group.gid)

        let member = try Self.asNobody([ctl, "status", "--socket", daemon.socket], groups: [group.gid], in: daemon.directory)
        #expect(member.status == 0, "a member: \(member.stderr)")
        #expect(member.stdout.contains("state:    active"))

        for arguments in [["status"], ["state", "suspended"], ["watch", "--count", "1"]] {
            let outsider = try Self.asNobody([ctl] + arguments + ["--socket", daemon.socket], groups: [], in: daemon.directory)
            #expect(outsider.status == 77, "\(arguments): \(outsider.stderr)")
            #expect(outsider.stderr.contains("only locationd's user and the group \(group.name) may use it"), "\(outsider.stderr)")
            #expect(outsider.stdout.isEmpty)
        }
        #expect(try daemon.status().state == .active, "the outsider's state change had no effect")
    }

    @Test("a control group that does not exist, or an empty one, is exit 64 in one line saying how to fix it")
    func missingGroup() throws {
        let directory = TemporaryDirectory()
        let cases: [(arguments: [String], environment: [String: String])] = [
            (["--control-group", "no-such-group-7f3a"], [:]),
            ([], ["LOCATIOND_CONTROL_GROUP": "no-such-group-7f3a"]),
            (["--control-group", ""], [:]),
        ]
        for (arguments, environment) in cases {
            let result = try Tool.run("locationd", ["--check-config"] + arguments, environment: environment, timeout: 30, in: directory)
            #expect(result.status == 64, "\(arguments) \(environment): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
            #expect(result.stderr.contains("no-such-group-7f3a") ? result.stderr.contains("groupadd") : result.stderr.contains("empty"), "\(result.stderr)")
        }
        // Starting for real fails the same way, before any socket exists.
        let socket = directory.file("run/control.sock")
        let track = try directory.track(count: 5)
        let start = try Tool.run(
            "locationd", ["--replay", track, "--socket", socket, "--control-group", "no-such-group-7f3a"], timeout: 30, in: directory)
        #expect(start.status == 64, "\(start.stderr)")
        #expect(!FileManager.default.fileExists(atPath: socket))
    }

    @Test(
        "a daemon that may not give the socket to the group (not root, not a member) exits 73 saying so",
        .enabled(if: getuid() == 0 && group != nil, "switching users needs root, and the group users must exist"))
    func daemonOutsideTheGroup() throws {
        let group = try #require(Self.group)
        let directory = TemporaryDirectory()
        chmod(directory.path, 0o755)
        let home = directory.file("nobody")
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        chown(home, 65534, 65534)
        let daemon = directory.file("locationd")
        try FileManager.default.copyItem(atPath: Tool.path("locationd"), toPath: daemon)
        chmod(daemon, 0o755)
        let track = try directory.track(count: 5)
        chmod(track, 0o644)
        let result = try Self.asNobody(
            [daemon, "--replay", track, "--socket", home + "/run/control.sock", "--control-group", group.name], groups: [], in: directory)
        #expect(result.status == 73, "\(result.stderr)")
        #expect(result.stderr.contains("must run as root or as a member of that group"), "\(result.stderr)")
    }
}

/// Which socket `locationctl` talks to, and where every command takes its settings from.
@Suite("locationctl's socket and settings", .serialized)
struct ClientSettingsTests {
    static let systemSocketAbsent = !FileManager.default.fileExists(atPath: ControlSocketChoice.systemSocket)

    @Test("the socket is --socket, else LOCATIOND_SOCKET, else the file's, else the user's then the system's")
    func choiceOrder() async throws {
        let directory = TemporaryDirectory()
        let file = directory.file("c.yaml")
        try "socket: /from/file.sock\n".write(toFile: file, atomically: true, encoding: .utf8)
        let environment = ["XDG_RUNTIME_DIR": "/run/user/1000", "LOCATIOND_SOCKET": "/from/env.sock"]

        let fromFile = try await ServiceConfiguration.load(path: file, environment: ["XDG_RUNTIME_DIR": "/run/user/1000"])
        let both = try await ServiceConfiguration.load(path: file, environment: environment)
        let none = try await ServiceConfiguration.load(path: nil, environment: ["XDG_RUNTIME_DIR": "/run/user/1000"])

        #expect(ControlSocketChoice.resolve(flag: "/flag.sock", settings: both, environment: environment)
            == ControlSocketChoice(candidates: ["/flag.sock"], origin: .flag))
        #expect(ControlSocketChoice.resolve(flag: nil, settings: both, environment: environment)
            == ControlSocketChoice(candidates: ["/from/env.sock"], origin: .environment))
        #expect(ControlSocketChoice.resolve(flag: nil, settings: fromFile, environment: ["XDG_RUNTIME_DIR": "/run/user/1000"])
            == ControlSocketChoice(candidates: ["/from/file.sock"], origin: .configurationFile))
        #expect(ControlSocketChoice.resolve(flag: nil, settings: none, environment: ["XDG_RUNTIME_DIR": "/run/user/1000"])
            == ControlSocketChoice(candidates: ["/run/user/1000/locationd/control.sock", "/run/locationd/control.sock"], origin: .defaults))
        let noRuntime = try await ServiceConfiguration.load(path: nil, environment: [:])
        #expect(ControlSocketChoice.resolve(flag: nil, settings: noRuntime, environment: [:]).candidates == ["/run/locationd/control.sock"])
    }

    @Test("status uses LOCATIOND_SOCKET, the user's socket or the configuration file's, and says which (text and JSON)")
    func statusNamesTheSocket() throws {
        let daemon = try RunningDaemon()
        let viaEnvironment = try Tool.run("locationctl", ["status"], environment: ["LOCATIOND_SOCKET": daemon.socket], in: daemon.directory)
        #expect(viaEnvironment.status == 0, "\(viaEnvironment.stderr)")
        #expect(viaEnvironment.stdout.contains("socket:   \(daemon.socket)"), "\(viaEnvironment.stdout)")

        // The user's own socket ($XDG_RUNTIME_DIR/locationd/control.sock, here a link to the daemon's).
        let userDirectory = daemon.directory.file("locationd")
        try FileManager.default.createDirectory(atPath: userDirectory, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: userDirectory + "/control.sock", withDestinationPath: daemon.socket)
        let json = try Tool.run("locationctl", ["status", "--format", "json"], in: daemon.directory)
        #expect(json.status == 0, "\(json.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["socket"] as? String == userDirectory + "/control.sock")
        try FileManager.default.removeItem(atPath: userDirectory + "/control.sock")

        // The user's configuration file ($XDG_CONFIG_HOME/locationd/locationd.yaml).
        let config = daemon.directory.file("config/locationd")
        try FileManager.default.createDirectory(atPath: config, withIntermediateDirectories: true)
        try "socket: \(daemon.socket)\n".write(toFile: config + "/locationd.yaml", atomically: true, encoding: .utf8)
        let viaFile = try Tool.run(
            "locationctl", ["state"], environment: ["XDG_CONFIG_HOME": daemon.directory.file("config")], in: daemon.directory)
        #expect(viaFile.status == 0, "\(viaFile.stderr)")
        #expect(viaFile.stdout.hasPrefix("active"), "\(viaFile.stdout)")
    }

    @Test("an explicit --socket is never replaced by another socket that answers")
    func explicitSocketWins() throws {
        let daemon = try RunningDaemon()
        let missing = daemon.directory.file("elsewhere/control.sock")
        for command in [["status"], ["state"], ["current", "--timeout", "1"]] {
            let result = try Tool.run(
                "locationctl", command + ["--socket", missing], environment: ["LOCATIOND_SOCKET": daemon.socket], in: daemon.directory)
            #expect(result.status == 69, "\(command): \(result.stderr)")
            #expect(result.stderr.contains(missing), "\(command): \(result.stderr)")
            #expect(!result.stderr.contains(daemon.socket), "\(command): \(result.stderr)")
        }
    }

    @Test(
        "with no daemon at the user's socket nor the system's, status names both and exits 69",
        .enabled(if: systemSocketAbsent, "a system locationd listens on /run/locationd/control.sock here"))
    func bothSocketsTried() throws {
        let directory = TemporaryDirectory()
        let result = try Tool.run("locationctl", ["status"], in: directory)
        #expect(result.status == 69, "\(result.stderr)")
        #expect(result.stderr.contains(directory.file("locationd/control.sock")), "\(result.stderr)")
        #expect(result.stderr.contains("/run/locationd/control.sock"), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1)
    }

    @Test(
        "current reads gpsd's address from the flag, else LOCATIOND_GPSD_*, else the file",
        .enabled(if: systemSocketAbsent, "a system locationd listens on /run/locationd/control.sock here"))
    func currentFollowsTheOrder() throws {
        let directory = TemporaryDirectory()
        let file = directory.file("c.yaml")
        // Ports nothing listens on: each failure names the port it tried, which shows where it came from.
        try "gpsd:\n  port: 3\n".write(toFile: file, atomically: true, encoding: .utf8)
        let cases: [(arguments: [String], environment: [String: String], port: String)] = [
            (["--config", file], [:], "3"),
            (["--config", file], ["LOCATIOND_GPSD_PORT": "2"], "2"),
            (["--config", file, "--gpsd", "127.0.0.1:1"], ["LOCATIOND_GPSD_PORT": "2"], "1"),
        ]
        for (arguments, environment, port) in cases {
            let result = try Tool.run(
                "locationctl", ["current", "--timeout", "2"] + arguments, environment: environment, timeout: 30, in: directory)
            #expect(result.status == 69, "\(arguments) \(environment): \(result.stderr)")
            #expect(result.stderr.contains(":\(port)"), "\(arguments) \(environment) should try port \(port): \(result.stderr)")
        }
    }
}
