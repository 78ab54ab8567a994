import Foundation
import Testing

/// `Config/locationd.service` as systemd reads it: valid, and hardened.
@Suite("the systemd unit")
struct SystemdUnitTests {
    /// systemd-analyze, if installed (Debian's package `systemd`; scripts/install-deps installs it).
    static let analyze = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].first { FileManager.default.isExecutableFile(atPath: $0) }
    /// The worst `systemd-analyze security` exposure accepted (0 is best, 10 worst; 8.9 before hardening).
    static let highestExposure = 2.0

    /// A copy of the unit whose ExecStart runs the built locationd, since verify needs the binary to exist.
    static func unitCopy(in directory: TemporaryDirectory) throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("Config/locationd.service"), encoding: .utf8)
        #expect(text.contains("ExecStart=/usr/local/bin/locationd "), "scripts/install rewrites this path: keep it")
        let copy = directory.file("locationd.service")
        try text.replacingOccurrences(of: "/usr/local/bin/locationd", with: Tool.path("locationd"))
            .write(toFile: copy, atomically: true, encoding: .utf8)
        return copy
    }

    @Test("systemd-analyze verify accepts the unit", .enabled(if: analyze != nil, "systemd-analyze is not installed (apt-get install systemd)"))
    func verifies() throws {
        let directory = TemporaryDirectory()
        let unit = try Self.unitCopy(in: directory)
        // --man=no: the Documentation= pages are installed by scripts/install, not present in a build tree.
        let result = try Tool.run(Self.analyze!, ["verify", "--man=no", unit], timeout: 60, in: directory)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stderr.isEmpty, "systemd-analyze verify complains: \(result.stderr)")
    }

    @Test(
        "systemd-analyze security rates the unit 2.0 or lower (it was 8.9 before hardening)",
        .enabled(if: analyze != nil, "systemd-analyze is not installed (apt-get install systemd)"))
    func exposureIsLow() throws {
        let directory = TemporaryDirectory()
        let unit = try Self.unitCopy(in: directory)
        let result = try Tool.run(Self.analyze!, ["security", "--offline=yes", "--no-pager", unit], timeout: 60, in: directory)
        let line = try #require(
            (result.stdout + result.stderr).split(separator: "\n").first { $0.contains("Overall exposure level") },
            "no rating in: \(result.stdout)\(result.stderr)")
        let number = try #require(line.split(separator: ":").last?.split(separator: " ").first.flatMap { Double($0) }, "\(line)")
        let problems = result.stdout.split(separator: "\n").filter { $0.hasPrefix("✗") }.joined(separator: "\n")
        #expect(number <= Self.highestExposure, "exposure \(number) > \(Self.highestExposure); what is open:\n\(problems)")
        // The measures this service cannot do without, named so that dropping one fails here.
        let text = try String(contentsOfFile: unit, encoding: .utf8)
        for setting in [
            "User=locationd", "NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes", "CapabilityBoundingSet=\n",
            "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6", "SystemCallFilter=@system-service", "StateDirectory=locationd",
            "RuntimeDirectory=locationd", "RuntimeDirectoryMode=0750", "--control-group locationd",
        ] {
            #expect(text.contains(setting), "the unit lacks \(setting)")
        }
    }
}
