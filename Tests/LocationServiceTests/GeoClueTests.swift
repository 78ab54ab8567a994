import Foundation
import GPSDTestSupport
import LocationControl
import LocationCore
import LocationGPX
import LocationTesting
import Testing

/// Debian's real GeoClue (2.6) reading locationd's NMEA socket, with nothing of the machine's touched: a
/// private D-Bus system bus of its own, GeoClue's configuration bind-mounted over /etc/geoclue/geoclue.conf
/// in a mount namespace of its own (the only file it reads), every network source off and the wifi
/// source's lookup pointed at a closed loopback port, GeoClue running as its own user (so the socket's
/// group is what lets it in), the demo agent that GeoClue waits for, and a client that asks for EXACT
/// accuracy under a desktop id the configuration allows.
@Suite("GeoClue reads the NMEA socket", .serialized)
struct GeoClueTests {
    static let geoclue = "/usr/libexec/geoclue"
    static let agent = "/usr/libexec/geoclue-2.0/demos/agent"
    static let python = "/usr/bin/python3"

    /// Whether everything the test starts is installed and it may make a mount namespace (root).
    static let canRun: Bool = {
        guard getuid() == 0, getpwnam("geoclue") != nil, getgrnam("geoclue") != nil,
            FileManager.default.isExecutableFile(atPath: geoclue), FileManager.default.isExecutableFile(atPath: agent),
            ExecutableLookup.path(of: "dbus-daemon") != nil, ExecutableLookup.path(of: "unshare") != nil,
            ExecutableLookup.path(of: "setpriv") != nil, FileManager.default.isExecutableFile(atPath: python)
        else { return false }
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: python)
        probe.arguments = ["-c", "import dbus, dbus.mainloop.glib, gi.repository.GLib"]
        probe.standardError = FileHandle.nullDevice
        guard (try? probe.run()) != nil else { return false }
        probe.waitUntilExit()
        return probe.terminationStatus == 0
    }()
    static let missing: Comment =
        "needs root, geoclue-2.0 (its user and demo agent), dbus-daemon, util-linux and python3-dbus with python3-gi"

    /// A client as a desktop app is one: it asks GeoClue's manager for a client, sets its desktop id and
    /// EXACT accuracy (8), starts it, and prints each location GeoClue reports: latitude, longitude and
    /// accuracy, until it has `count` or `seconds` have passed.
    static let client = """
        import sys, dbus
        from dbus.mainloop.glib import DBusGMainLoop
        from gi.repository import GLib
        DBusGMainLoop(set_as_default=True)
        bus = dbus.SystemBus()
        name = "org.freedesktop.GeoClue2"
        manager = dbus.Interface(bus.get_object(name, "/org/freedesktop/GeoClue2/Manager"), name + ".Manager")
        client = bus.get_object(name, manager.GetClient())
        properties = dbus.Interface(client, "org.freedesktop.DBus.Properties")
        properties.Set(name + ".Client", "DesktopId", "locationd-check")
        properties.Set(name + ".Client", "RequestedAccuracyLevel", dbus.UInt32(8))
        loop = GLib.MainLoop()
        seen = []
        def updated(old, new):
            location = dbus.Interface(bus.get_object(name, new), "org.freedesktop.DBus.Properties")
            get = lambda key: float(location.Get(name + ".Location", key))
            print("%.9f %.9f %.1f" % (get("Latitude"), get("Longitude"), get("Accuracy")), flush=True)
            seen.append(new)
            if len(seen) >= int(sys.argv[1]): loop.quit()
        client.connect_to_signal("LocationUpdated", updated, dbus_interface=name + ".Client")
        dbus.Interface(client, name + ".Client").Start()
        GLib.timeout_add_seconds(int(sys.argv[2]), loop.quit)
        loop.run()
        """

    @Test("a GeoClue client gets locationd's fixes, with GeoClue reading the socket as its own user through the socket's group", .enabled(if: canRun, missing))
    func clientGetsOurPosition() throws {
        let directory = TemporaryDirectory()
        chmod(directory.path, 0o755)  // GeoClue's user must reach the socket inside it
        // A walk whose fixes carry an HDOP of 1.5: GeoClue turns it into an accuracy of 1 m.
        let walk = LocationFixtures.walk(count: 3600).map { fix -> Location in
            var fix = fix
            fix.hdop = 1.5
            return fix
        }
        let track = directory.file("walk.gpx")
        let writer = try GPXWriter(path: track)
        try writer.write(contentsOf: walk)
        try writer.finish()

        // As the unit's drop-in of docs/NMEA.md makes it: the runtime directory 0751 (others pass through,
        // none lists it), and the socket in a directory of its own that locationd gives the group.
        mkdir(directory.file("run"), 0o751)
        chmod(directory.file("run"), 0o751)
        let socket = directory.file("run/nmea/nmea.sock")
        let daemon = try RunningDaemon(
            directory: directory, source: ["--replay", track, "--speed", "2"], extra: ["--nmea-socket", socket, "--nmea-group", "geoclue"])
        var info = stat()
        #expect(stat(socket, &info) == 0 && info.st_mode & 0o777 == 0o660 && info.st_gid == getgrnam("geoclue")!.pointee.gr_gid)

        let bus = directory.file("bus.sock")
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>system</type>
              <listen>unix:path=\(bus)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow user="*"/>
                <allow own="*"/>
                <allow send_type="method_call"/>
                <allow send_type="signal"/>
                <allow send_type="method_return"/>
                <allow send_type="error"/>
                <allow receive_type="method_call"/>
                <allow receive_type="signal"/>
                <allow receive_type="method_return"/>
                <allow receive_type="error"/>
              </policy>
            </busconfig>
            """.write(toFile: directory.file("bus.conf"), atomically: true, encoding: .utf8)
        let closedPort = try LoopbackTCP.freePort()
        let configuration = directory.file("geoclue.conf")
        try """
            [agent]
            whitelist=geoclue-demo-agent
            [network-nmea]
            enable=true
            nmea-socket=\(socket)
            [3g]
            enable=false
            [cdma]
            enable=false
            [modem-gps]
            enable=false
            [wifi]
            enable=false
            url=http://127.0.0.1:\(closedPort)/
            submit-data=false
            [compass]
            enable=false
            [locationd-check]
            allowed=true
            system=false
            users=
            """.write(toFile: configuration, atomically: true, encoding: .utf8)
        chmod(configuration, 0o644)
        try Self.client.write(toFile: directory.file("client.py"), atomically: true, encoding: .utf8)

        let environment = ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(bus)"]
        let busDaemon = try ChildProcess(["dbus-daemon", "--config-file=\(directory.file("bus.conf"))", "--nofork"])
        defer { _ = busDaemon.stop() }
        try #require(eventually(10) { access(bus, F_OK) == 0 }, "the private bus did not start")
        let geoclueLog = directory.file("geoclue.log")
        let service = try ChildProcess(
            [
                "unshare", "-m", "sh", "-c",
                "mount --bind \"$1\" /etc/geoclue/geoclue.conf && exec setpriv --reuid=geoclue --regid=geoclue --init-groups /usr/libexec/geoclue -t 0 >\"$2\" 2>&1",
                "geoclue-check", configuration, geoclueLog,
            ],
            environment: environment.merging(["G_MESSAGES_DEBUG": "all"]) { $1 })
        defer { _ = service.stop() }
        var log: String { (try? String(contentsOfFile: geoclueLog, encoding: .utf8)) ?? "" }
        try #require(eventually(20) { log.contains("Available accuracy level from GClueNMEASource") }, "GeoClue did not start: \(log)")
        let agent = try ChildProcess([Self.agent], environment: environment)
        defer { _ = agent.stop() }
        try #require(eventually(20) { log.contains("New agent for user ID '0'") }, "the agent did not register: \(log)")

        let result = try Tool.run(Self.python, [directory.file("client.py"), "3", "60"], environment: environment, timeout: 90, in: directory)
        #expect(result.status == 0, "\(result.stderr)")
        let reported = result.lines.compactMap { line -> (Double, Double, Double)? in
            let parts = line.split(separator: " ").compactMap { Double($0) }
            return parts.count == 3 ? (parts[0], parts[1], parts[2]) : nil
        }
        #expect(reported.count == 3, "GeoClue reported \(result.stdout); its log: \(log.suffix(3000))")
        for (latitude, longitude, accuracy) in reported {
            #expect(walk.contains { abs($0.latitude - latitude) < 1e-7 && abs($0.longitude - longitude) < 1e-7 }, "\(latitude) \(longitude) is none of our fixes")
            #expect(accuracy == 1, "GeoClue's accuracy for HDOP 1.5")
        }
        // GeoClue was the socket's reader; it lets go when its last client leaves (and the receiver may rest),
        // and connects again for the next one.
        #expect(try daemon.status().nmeaSocket?.epochsSent ?? 0 >= 3)
        #expect(eventually(20) { (try? daemon.status().nmeaSocket?.connections) == 0 })
        let again = try Tool.run(Self.python, [directory.file("client.py"), "1", "60"], environment: environment, timeout: 90, in: directory)
        #expect(again.lines.count == 1, "a second client: \(again.stdout) \(again.stderr)")
    }
}
