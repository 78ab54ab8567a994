import Foundation
import LocationCore
import LocationGPX
import Testing

/// A private gpsd fed by gpsfake from one of the shared receiver captures, on a free loopback port.
final class FakeGPSD: Sendable {
    let port: Int
    let process: Process
    private let segmentsBefore: Set<String>

    static let gpsfake: String? = ["/usr/bin/gpsfake", "/usr/local/bin/gpsfake"].first { FileManager.default.isExecutableFile(atPath: $0) }

    init(capture: String, directory: TemporaryDirectory) throws {
        guard let gpsfake = Self.gpsfake else { throw LocationError(.sourceUnavailable, "gpsfake is not installed") }
        segmentsBefore = Self.sharedMemorySegments()
        port = try Self.freePort()
        process = Process()
        process.executableURL = URL(fileURLWithPath: gpsfake)
        process.arguments = ["-1", "-q", "-P", String(port), "-c", "0.05", "-W", "30", capture]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, !Self.accepts(port: port) { usleep(20_000) }
    }

    deinit {
        // gpsfake's gpsd child outlives gpsfake itself; both are stopped for good.
        let gpsd = Process()
        gpsd.executableURL = URL(fileURLWithPath: "/usr/bin/pkill")
        gpsd.arguments = ["-KILL", "-f", "gpsd .*-S \(port) "]
        try? gpsd.run()
        gpsd.waitUntilExit()
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        // gpsd leaves System V shared-memory segments behind; remove the ones this run created.
        for id in Self.sharedMemorySegments().subtracting(segmentsBefore) {
            let remove = Process()
            remove.executableURL = URL(fileURLWithPath: "/usr/bin/ipcrm")
            remove.arguments = ["-m", id]
            try? remove.run()
            remove.waitUntilExit()
        }
    }

    static func sharedMemorySegments() -> Set<String> {
        let ipcs = Process()
        ipcs.executableURL = URL(fileURLWithPath: "/usr/bin/ipcs")
        ipcs.arguments = ["-m"]
        let pipe = Pipe()
        ipcs.standardOutput = pipe
        guard (try? ipcs.run()) != nil else { return [] }
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        ipcs.waitUntilExit()
        return Set(output.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            return fields.count > 2 && fields[0].hasPrefix("0x") ? String(fields[1]) : nil
        })
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw LocationError(.sourceUnavailable, "no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}

@Suite("locationctl against a real gpsd", .serialized)
struct GPSDCommandTests {
    static func capture(_ name: String) -> String? {
        guard let data = sharedTestData else {
            print("SKIPPED: ../shared/testdata is not beside the checkout")
            return nil
        }
        guard FakeGPSD.gpsfake != nil else {
            print("SKIPPED: gpsfake is not installed (apt-get install gpsd python3-gps); gpsd CLI tests did not run")
            return nil
        }
        return data + "/gpsd/" + name
    }

    @Test("watch --gpsd prints live fixes from gpsd and stops at --count")
    func watch() throws {
        guard let capture = Self.capture("ublox-neo-m9n-nmea.log") else { return }
        let directory = TemporaryDirectory()
        let gpsd = try FakeGPSD(capture: capture, directory: directory)
        let result = try Tool.run(
            "locationctl", ["watch", "--gpsd", "127.0.0.1:\(gpsd.port)", "--count", "3", "--format", "jsonl"],
            timeout: 60, in: directory)
        #expect(result.status == 0, "\(result.stderr)")
        let locations = try jsonObjects(result.lines).filter { $0["type"] as? String == "location" }
        #expect(locations.count == 3)
        #expect(locations.allSatisfy { $0["isSimulated"] as? Bool == false && $0["latitude"] is Double })
    }

    @Test("current --gpsd prints one position from gpsd")
    func current() throws {
        guard let capture = Self.capture("ublox-neo-m9n-nmea.log") else { return }
        let directory = TemporaryDirectory()
        let gpsd = try FakeGPSD(capture: capture, directory: directory)
        let result = try Tool.run(
            "locationctl", ["current", "--gpsd", "127.0.0.1:\(gpsd.port)", "--timeout", "30", "--format", "json"],
            timeout: 60, in: directory)
        #expect(result.status == 0, "\(result.stderr)")
        let location = try JSONDecoder().decode(Location.self, from: Data(result.stdout.utf8))
        #expect(location.fixMode != nil)
    }

    @Test("a receiver that never fixes: current exits 75 (no fix in time)")
    func noFix() throws {
        guard let capture = Self.capture("skytraq.log") else { return }
        let directory = TemporaryDirectory()
        let gpsd = try FakeGPSD(capture: capture, directory: directory)
        let result = try Tool.run(
            "locationctl", ["current", "--gpsd", "127.0.0.1:\(gpsd.port)", "--timeout", "3"], timeout: 60, in: directory)
        #expect(result.status == 75, "\(result.stderr)")
        #expect(result.stderr.contains("no fix"))
    }

    @Test("something else on the port, or a device gpsd does not have: exit 69 with one line saying so")
    func notGPSDAndNoSuchDevice() throws {
        // The receiver's own NMEA port: a likely mistake for gpsd's.
        let feed = try NMEAFeedServer()
        defer { feed.stop() }
        let directory = TemporaryDirectory()
        let notGPSD = "locationctl: the peer at 127.0.0.1:\(feed.port) is not speaking gpsd's JSON protocol; it sent '$GPGGA,"
        for command in [["watch"], ["current", "--timeout", "10"]] {
            let result = try Tool.run(
                "locationctl", command + ["--gpsd", "127.0.0.1:\(feed.port)"], timeout: 60, in: directory)
            #expect(result.status == 69, "\(command): \(result.stderr)")
            #expect(result.stderr.hasPrefix(notGPSD), "\(command): \(result.stderr)")
            #expect(result.stderr.filter { $0 == "\n" }.count == 1, "\(command): one line")
        }
        guard GPSDProcess.executable != nil else {
            print("SKIPPED: gpsd is not installed; the --device check did not run")
            return
        }
        let gpsd = try GPSDProcess(feedPort: feed.port)
        defer { gpsd.stop() }
        try gpsd.start()
        let result = try Tool.run(
            "locationctl", ["watch", "--gpsd", "127.0.0.1:\(gpsd.port)", "--device", "/dev/ttyNONE"], timeout: 60, in: directory)
        #expect(result.status == 69)
        #expect(result.stderr == "locationctl: gpsd at 127.0.0.1:\(gpsd.port) refused to stream: No such device as /dev/ttyNONE\n")
    }

    @Test("nothing listening: current and watch exit 69 naming the address")
    func unreachable() throws {
        let directory = TemporaryDirectory()
        let port = try FakeGPSD.freePort()
        let current = try Tool.run(
            "locationctl", ["current", "--gpsd", "127.0.0.1:\(port)", "--timeout", "5"], timeout: 60, in: directory)
        #expect(current.status == 69, "\(current.stderr)")
        #expect(current.stderr.contains("127.0.0.1:\(port)"))
        let watch = try Tool.run("locationctl", ["watch", "--gpsd", "127.0.0.1:\(port)"], timeout: 60, in: directory)
        #expect(watch.status == 69, "\(watch.stderr)")
        #expect(watch.stderr.contains("127.0.0.1:\(port)"))
    }
}
