import Foundation
import LocationControl
import LocationCore
import LocationTesting
import Testing

/// A client of locationd's NMEA socket, as GeoClue is: it connects and reads lines.
final class NMEAReader {
    let fd: Int32
    private var pending: [UInt8] = []
    /// Whether the server closed the connection.
    private(set) var closed = false

    /// Connects; with `receiveBuffer`, the socket's receive buffer is made that small first (a reader that
    /// does not read then fills up quickly).
    init(path: String, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw LocationError(.sourceUnavailable, "socket: \(String(cString: strerror(errno)))") }
        if var size = receiveBuffer {
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() where index < raw.count - 1 { raw[index] = byte }
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard result == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw LocationError(.sourceUnavailable, "connect \(path): \(reason)")
        }
    }

    deinit { close(fd) }

    /// Reads for up to `duration`, returning the complete lines (without CR LF) that came.
    func read(for duration: Duration, until enough: ([String]) -> Bool = { _ in false }) -> [String] {
        var lines: [String] = []
        let deadline = ContinuousClock.now + duration
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !closed, !enough(lines), ContinuousClock.now < deadline {
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let left = deadline - ContinuousClock.now
            let milliseconds = Int32(max(0, min(200, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)))
            guard poll(&descriptor, 1, milliseconds) > 0 else { continue }
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 {
                closed = count == 0 || (errno != EAGAIN && errno != EINTR)
                continue
            }
            pending += buffer[0..<count]
            while let end = pending.firstIndex(of: 0x0A) {
                var line = Array(pending[..<end])
                if line.last == 0x0D { line.removeLast() }
                lines.append(String(decoding: line, as: UTF8.self))
                pending.removeSubrange(...end)
            }
        }
        return lines
    }

    /// Whether `line` is `$BODY*CS` with the right checksum.
    static func isValid(_ line: String) -> Bool {
        guard line.hasPrefix("$"), let star = line.lastIndex(of: "*") else { return false }
        let sum = line[line.index(after: line.startIndex)..<star].utf8.reduce(UInt8(0)) { $0 ^ $1 }
        return line[line.index(after: star)...] == String(format: "%02X", sum)
    }

    /// The latitude and longitude of a GGA line, in degrees.
    static func coordinate(ofGGA line: String) -> (latitude: Double, longitude: Double)? {
        let fields = line.split(separator: ",", omittingEmptySubsequences: false)
        guard fields.count >= 6, fields[0] == "$GPGGA", let lat = Double(fields[2]), let lon = Double(fields[4]) else { return nil }
        let latitude = (lat / 100).rounded(.towardZero) + lat.truncatingRemainder(dividingBy: 100) / 60
        let longitude = (lon / 100).rounded(.towardZero) + lon.truncatingRemainder(dividingBy: 100) / 60
        return (fields[3] == "S" ? -latitude : latitude, fields[5] == "W" ? -longitude : longitude)
    }
}

@Suite("locationd's NMEA socket", .serialized)
struct NMEASocketTests {
    @Test("a reader gets each fix as valid GGA, GSA and RMC sentences of the walk; the socket is owner-only")
    func readerGetsFixes() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("run/nmea.sock")
        let daemon = try RunningDaemon(directory: directory, extra: ["--nmea-socket", path])
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o600 && info.st_mode & S_IFMT == S_IFSOCK)
        let reader = try NMEAReader(path: path)
        let lines = reader.read(for: .seconds(30)) { $0.count >= 30 }
        try #require(lines.count >= 30, "\(lines.count) lines: \(daemon.logText)")
        #expect(lines.allSatisfy(NMEAReader.isValid), "\(lines)")
        // Each epoch is GGA, GSA, RMC in that order; the first line may be any of them only if the socket
        // started mid-epoch, which it never does.
        let kinds = lines.map { String($0.prefix(6)) }
        #expect(kinds.count >= 30 && Array(kinds[0..<3]) == ["$GPGGA", "$GPGSA", "$GPRMC"], "\(kinds)")
        let walk = LocationFixtures.walk(count: 3600)
        for line in lines where line.hasPrefix("$GPGGA") {
            let (latitude, longitude) = try #require(NMEAReader.coordinate(ofGGA: line))
            #expect(walk.contains { abs($0.latitude - latitude) < 1e-7 && abs($0.longitude - longitude) < 1e-7 }, "\(line)")
        }
        let status = try #require(try daemon.status().nmeaSocket)
        #expect(status.path == path && status.connections == 1 && status.epochsSent >= 10)
        #expect(try daemon.ctl(["status"]).stdout.contains("nmea:     \(path): 1 reader,"))
        #expect(daemon.stop() == 0)
        #expect(access(path, F_OK) != 0, "the socket file is removed at exit")
    }

    @Test("a reader that never reads misses whole epochs, counted, is never closed, and others keep getting every fix")
    func stalledReader() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("run/nmea.sock")
        let daemon = try RunningDaemon(
            directory: directory, source: ["--replay", directory.track(count: 100_000), "--speed", "500"], extra: ["--nmea-socket", path])
        let stalled = try NMEAReader(path: path, receiveBuffer: 4096)
        let reader = try NMEAReader(path: path)
        var missed = 0
        var seen: [String] = []
        let deadline = ContinuousClock.now + .seconds(60)
        while missed == 0, ContinuousClock.now < deadline {
            seen += reader.read(for: .milliseconds(200))
            missed = try daemon.status().nmeaSocket?.epochsMissed ?? 0
        }
        try #require(missed > 0, "the stalled reader's buffer never filled")
        seen += reader.read(for: .milliseconds(500))
        #expect(try daemon.status().nmeaSocket?.connections == 2)
        // The reader that keeps up got every epoch meanwhile (the walk's fixes are a second apart): the misses
        // are all the stalled one's.
        let seconds = seen.filter { $0.hasPrefix("$GPGGA,") }.compactMap { line -> Int? in
            let time = Array(line.utf8.dropFirst(7).prefix(6)).map { Int($0) - 48 }
            guard time.count == 6 else { return nil }
            return (time[0] * 10 + time[1]) * 3600 + (time[2] * 10 + time[3]) * 60 + time[4] * 10 + time[5]
        }
        #expect(seconds.count > 100)
        #expect(zip(seconds, seconds.dropFirst()).allSatisfy { ($1 - $0 + 86_400) % 86_400 == 1 }, "a gap for the reader that keeps up")
        // Once it reads, it gets complete sentences and then live epochs again: the connection stayed open.
        let drained = stalled.read(for: .seconds(10)) { $0.count > 200_000 / 70 }
        #expect(!stalled.closed)
        #expect(drained.count > 100)
        #expect(drained.allSatisfy(NMEAReader.isValid), "a torn sentence: \(drained.first { !NMEAReader.isValid($0) } ?? "")")
        let later = stalled.read(for: .seconds(10)) { $0.count >= 9 }
        #expect(later.count >= 9 && later.allSatisfy(NMEAReader.isValid))
        #expect(try daemon.status().nmeaSocket?.connections == 2)
    }

    @Test("beyond 32 readers a connection is closed at once and counted; the first readers keep reading")
    func tooManyReaders() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("run/nmea.sock")
        let daemon = try RunningDaemon(directory: directory, extra: ["--nmea-socket", path])
        var readers: [NMEAReader] = []
        for _ in 0..<40 { readers.append(try NMEAReader(path: path)) }
        #expect(eventually { (try? daemon.status().nmeaSocket?.refused) == 8 })
        let closedOnes = readers.filter { reader in
            _ = reader.read(for: .milliseconds(100)) { _ in reader.closed }
            return reader.closed
        }
        #expect(closedOnes.count == 8)
        #expect(readers[0].read(for: .seconds(20)) { $0.count >= 3 }.count >= 3)
        #expect(try daemon.status().nmeaSocket?.connections == 32)
        #expect(daemon.logText.contains("closed a connection beyond the 32 it serves"))
    }

    @Test("the receiver runs continuously for the socket only while a reader is connected")
    func receiverRunsForReaders() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("run/nmea.sock")
        let daemon = try RunningDaemon(directory: directory, extra: ["--nmea-socket", path, "--state", "background"])
        #expect(eventually { (try? daemon.status().receiver)?.hasPrefix("duty-cycled") == true }, "\((try? daemon.status().receiver) ?? "no status")")
        do {
            let reader = try NMEAReader(path: path)
            #expect(eventually { (try? daemon.status().receiver) == "continuous" })
            #expect(reader.read(for: .seconds(20)) { $0.count >= 3 }.count >= 3)
            // A reader that shut its sending side still reads.
            shutdown(reader.fd, Int32(SHUT_WR))
            #expect(reader.read(for: .seconds(20)) { $0.count >= 3 }.count >= 3)
            #expect(!reader.closed)
        }
        #expect(eventually { (try? daemon.status().receiver)?.hasPrefix("duty-cycled") == true })
        #expect(try daemon.status().nmeaSocket?.connections == 0)
    }

    @Test("a socket for a group in a directory the group may not pass through is refused at start (73), naming the directory")
    func unreachableForTheGroup() throws {
        let directory = TemporaryDirectory()
        mkdir(directory.file("run"), 0o700)
        let result = try Tool.run(
            "locationd",
            ["--replay", try directory.track(count: 10), "--socket", directory.file("run/control.sock"),
             "--nmea-socket", directory.file("run/nmea.sock"), "--nmea-group", "0"],
            timeout: 30, in: directory)
        #expect(result.status == 73, "\(result.stderr)")
        #expect(result.stderr.contains("could not reach socket \(directory.file("run/nmea.sock"))") && result.stderr.contains("directory \(directory.file("run")) (mode 700"), "\(result.stderr)")
        #expect(access(directory.file("run/nmea.sock"), F_OK) != 0)
        #expect(access(directory.file("run/control.sock"), F_OK) != 0, "the control socket is removed again")
    }

    @Test("check-config refuses what the start would: a directory others may write, a missing group, the control socket under any spelling, a relative path, a file in the way, /tmp, a directory the group cannot pass")
    func refusedPlaces() throws {
        let directory = TemporaryDirectory()
        let track = try directory.track(count: 10)
        let open = directory.file("open")
        mkdir(open, 0o777)
        chmod(open, 0o777)
        let base = ["--replay", track, "--socket", directory.file("run/control.sock"), "--check-config"]
        let unsafe = try Tool.run("locationd", base + ["--nmea-socket", open + "/nmea.sock"], in: directory)
        #expect(unsafe.status == 73 && unsafe.stderr.contains("may be changed by someone other than root"), "\(unsafe.stderr)")
        let group = try Tool.run("locationd", base + ["--nmea-socket", directory.file("run/nmea.sock"), "--nmea-group", "no-such-group-here"], in: directory)
        #expect(group.status == 64 && group.stderr.contains("NMEA socket group 'no-such-group-here'") && group.stderr.contains("--nmea-group"), "\(group.stderr)")
        let same = try Tool.run("locationd", base + ["--nmea-socket", directory.file("run/control.sock")], in: directory)
        #expect(same.status == 64 && same.stderr.contains("the same file"), "\(same.stderr)")
        let orphanGroup = try Tool.run("locationd", base + ["--nmea-group", "0"], in: directory)
        #expect(orphanGroup.status == 64 && orphanGroup.stderr.contains("without an NMEA socket"), "\(orphanGroup.stderr)")
        let valid = try Tool.run("locationd", base + ["--nmea-socket", directory.file("run/nmea.sock"), "--nmea-group", "0"], in: directory)
        #expect(valid.status == 0, "\(valid.stderr)")

        // What the start would refuse, check-config refuses: the control socket under another spelling, a
        // relative path, a file in the way, /tmp (sticky, but anyone may put a socket there, and GeoClue
        // would believe it), and a directory the group may not pass.
        mkdir(directory.file("run"), 0o700)
        let spelled = try Tool.run("locationd", base + ["--nmea-socket", directory.path + "//run/./../run/control.sock"], in: directory)
        #expect(spelled.status == 64 && spelled.stderr.contains("the same file"), "\(spelled.stderr)")
        let relative = try Tool.run("locationd", base + ["--nmea-socket", "nmea.sock"], in: directory)
        #expect(relative.status == 64 && relative.stderr.contains("is relative"), "\(relative.stderr)")
        _ = FileManager.default.createFile(atPath: directory.file("run/file"), contents: Data("keep".utf8))
        let inTheWay = try Tool.run("locationd", base + ["--nmea-socket", directory.file("run/file")], in: directory)
        #expect(inTheWay.status == 73 && inTheWay.stderr.contains("exists and is not a socket"), "\(inTheWay.stderr)")
        #expect(try String(contentsOfFile: directory.file("run/file"), encoding: .utf8) == "keep")
        let tmp = try Tool.run("locationd", base + ["--nmea-socket", "/tmp/locationd-check-\(getpid()).sock"], in: directory)
        #expect(tmp.status == 73 && tmp.stderr.contains("may be changed by someone other than root"), "\(tmp.stderr)")
        let unreachable = try Tool.run("locationd", base + ["--nmea-socket", directory.file("run/nmea.sock"), "--nmea-group", "0"], in: directory)
        #expect(unreachable.status == 73 && unreachable.stderr.contains("could not reach socket"), "\(unreachable.stderr)")
    }

    @Test("a directory of the group that lets others through but not the group (0705) is refused: the kernel takes the group's bits for members")
    func groupBitsDecide() throws {
        let directory = TemporaryDirectory()
        let shared = directory.file("shared")
        mkdir(shared, 0o705)
        chmod(shared, 0o705)
        chown(shared, 0, 65534)
        let result = try Tool.run(
            "locationd",
            ["--replay", try directory.track(count: 10), "--socket", directory.file("run/control.sock"),
             "--nmea-socket", shared + "/nmea/nmea.sock", "--nmea-group", "65534", "--check-config"],
            timeout: 30, in: directory)
        #expect(result.status == 73 && result.stderr.contains("directory \(shared) (mode 705"), "\(result.stderr)")
    }

    @Test("the socket's own directory, made owner-only by a run without a group, is given to the group by the next run with one")
    func ownDirectoryAdopted() throws {
        let directory = TemporaryDirectory()
        mkdir(directory.file("run"), 0o711)
        let path = directory.file("run/nmea/nmea.sock")
        do {
            let first = try RunningDaemon(directory: directory, extra: ["--nmea-socket", path])
            var info = stat()
            #expect(stat(directory.file("run/nmea"), &info) == 0 && info.st_mode & 0o777 == 0o700)
            #expect(first.stop() == 0)
        }
        let second = try RunningDaemon(directory: directory, extra: ["--nmea-socket", path, "--nmea-group", "65534"])
        var info = stat()
        #expect(stat(directory.file("run/nmea"), &info) == 0 && info.st_mode & 0o777 == 0o750 && info.st_gid == 65534)
        #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o660 && info.st_gid == 65534)
        #expect(second.stop() == 0)
    }

    @Test("a client that connects and hangs up in a loop does not crowd out readers")
    func connectionStorm() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("run/nmea.sock")
        let daemon = try RunningDaemon(directory: directory, extra: ["--nmea-socket", path])
        let stop = Locked(false)
        let storm = Thread {
            var rounds = 0
            while !stop.value, rounds < 200_000 {
                rounds += 1
                if let client = try? NMEAReader(path: path) { _ = client }
            }
        }
        storm.start()
        defer { stop.withLock { $0 = true } }
        for _ in 0..<5 {
            let reader = try NMEAReader(path: path)
            let lines = reader.read(for: .seconds(20)) { $0.count >= 3 }
            let status = (try? daemon.status().nmeaSocket).flatMap { $0 }.map { "\($0)" } ?? "no status"
            #expect(lines.count >= 3 && !reader.closed, "a reader was refused: \(status)")
        }
    }
}
