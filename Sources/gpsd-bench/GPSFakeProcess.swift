import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real gpsd started by gpsfake in its own process group, plus helper processes, for the CPU benchmark.
struct ChildProcess {
    let pid: pid_t

    /// Starts `arguments` with stdio on /dev/null in a new process group.
    init(_ arguments: [String]) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd in 0...2 {
            posix_spawn_file_actions_addopen(&actions, Int32(fd), "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0)
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, environ)
        guard status == 0 else { throw BenchError("cannot start \(arguments[0]): \(String(cString: strerror(status)))") }
        self.pid = pid
    }

    /// SIGTERM (gpsfake then stops and reaps its gpsd), SIGKILL of the group after 3 s, then reaps.
    func stop() {
        _ = kill(pid, SIGTERM)
        var status: Int32 = 0
        for _ in 0..<300 {
            if waitpid(pid, &status, WNOHANG) != 0 { return }
            usleep(10_000)
        }
        _ = kill(-pid, SIGKILL)
        _ = waitpid(pid, &status, 0)
    }
}

/// Removes the System V segments a gpsd left that were not there before (`ipcs -m`).
struct SharedMemoryCleanup {
    private let before: Set<Int32>

    init() { before = Set(Self.segments().keys) }

    func removeNew() {
        for (key, attached) in Self.segments() where attached == 0 && !before.contains(key) {
            let id = shmget(key_t(key), 0, 0)
            // Only gpsd's keys: its export segment (0x4770xxxx) and the NTP ones (NTP0..NTP7).
            let mine = (UInt32(bitPattern: key) & 0xFFFF_0000) == 0x4770_0000
                || (0x4E54_5030...0x4E54_5037).contains(key)
            if id >= 0, mine { _ = shmctl(id, IPC_RMID, nil) }
        }
    }

    private static func segments() -> [Int32: Int] {
        guard let text = try? String(contentsOfFile: "/proc/sysvipc/shm", encoding: .utf8) else { return [:] }
        var result: [Int32: Int] = [:]
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            if fields.count > 6, let key = Int32(fields[0]), let attached = Int(fields[6]) { result[key] = attached }
        }
        return result
    }
}

/// Writes a 10 Hz GGA + RMC capture with `epochs` epochs to a temporary file.
func writeSyntheticCapture(epochs: Int) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("gpsd-bench-\(getpid()).log")
    var text = ""
    func sentence(_ body: String) -> String {
        "$" + body + String(format: "*%02X", body.utf8.reduce(UInt8(0)) { $0 ^ $1 }) + "\r\n"
    }
    for epoch in 0..<epochs {
        let tenths = epoch
        let seconds = tenths / 10
        let time = String(format: "%02d%02d%02d.%02d", 6 + seconds / 3600, seconds / 60 % 60, seconds % 60, (tenths % 10) * 10)
        let latitude = 51.5 + Double(epoch) * 0.00001, longitude = 0.1 - Double(epoch) * 0.00001
        let lat = String(format: "%02d%07.4f", Int(latitude), (latitude - Double(Int(latitude))) * 60)
        let lon = String(format: "%03d%07.4f", Int(longitude), (longitude - Double(Int(longitude))) * 60)
        text += sentence("GPGGA,\(time),\(lat),N,\(lon),W,1,09,0.9,35.0,M,47.0,M,,")
        text += sentence("GPRMC,\(time),A,\(lat),N,\(lon),W,2.7,45.0,010524,,,A")
    }
    try text.write(to: url, atomically: true, encoding: .utf8)
    return url
}
