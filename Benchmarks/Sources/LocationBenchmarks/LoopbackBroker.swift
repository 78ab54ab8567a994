import Foundation
import GPSDTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// mosquitto on a loopback port, with no limit on queued messages; with `persistent`, its sessions and
/// queued messages are saved in `directory` at a stop and loaded at the next start, as a broker set up to
/// keep QoS 1 messages across its restarts is.
package final class LoopbackBroker {
    package let port: Int
    private let configurationPath: String
    private var process: ChildProcess?

    /// Starts the broker; returns once it accepts connections.
    package init(directory: String, port: Int, persistent: Bool = false) throws {
        self.port = port
        configurationPath = directory + "/mosquitto.conf"
        let user = getpwuid(getuid()).map { String(cString: $0.pointee.pw_name) } ?? "root"
        var configuration = "user \(user)\nlistener \(port) 127.0.0.1\nallow_anonymous true\nmax_queued_messages 0\n"
        if persistent { configuration += "persistence true\npersistence_location \(directory)/\n" }
        try configuration.write(toFile: configurationPath, atomically: true, encoding: .utf8)
        try start()
    }

    /// The running broker's process id.
    package var pid: pid_t? { process?.pid }

    /// Starts it again after ``stop()``, on the same port.
    package func start() throws {
        guard process == nil else { return }
        process = try ChildProcess(["mosquitto", "-c", configurationPath])
        let deadline = ContinuousClock.now + .seconds(10)
        while !LoopbackTCP.accepts(port: port) {
            guard ContinuousClock.now < deadline else { throw BenchError("mosquitto did not listen on \(port)") }
            usleep(10_000)
        }
    }

    /// Stops it with SIGTERM (a persistent broker saves its database first).
    package func stop() {
        process?.stop(signal: SIGTERM, grace: .seconds(10))
        process = nil
    }

    deinit { stop() }
}
