import Foundation
import GPSDTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A private gpsd started by `gpsfake` on a free loopback port, replaying one capture; the test owns the
/// whole process group and every shared-memory segment it leaves (``GPSFakeProcess``).
final class GPSFake: Sendable {
    /// Whether real-gpsd tests can run; prints a loud notice once when they cannot.
    static let isAvailable: Bool = {
        let installed = GPSFakeProcess.isInstalled
        if !installed {
            let banner = String(repeating: "!", count: 78)
            print("""
                \(banner)
                SKIPPING gpsd integration tests: gpsfake/gpsd not found.
                Install the Debian packages gpsd, gpsd-clients and python3-gps to run them.
                \(banner)
                """)
        }
        return installed
    }()

    /// Why a test that needs gpsfake did not run.
    static let missing: Comment = "gpsfake/gpsd not found: install the Debian packages gpsd, gpsd-clients and python3-gps"

    private let fake: GPSFakeProcess

    /// The port gpsd listens on.
    var port: Int { fake.port }

    /// Starts `gpsfake -1 -q -P port -c cycle log` in a process group of its own.
    init(log: URL, port: Int? = nil, cycle: Double = 0.05) throws {
        fake = try GPSFakeProcess(capture: log.path, port: port, options: ["-c", String(cycle)])
    }

    /// Waits until gpsd accepts connections on the port and (best effort, up to 10 s) lists gpsfake's device:
    /// gpsfake adds it only after gpsd answers, and a one-shot request to a gpsd without a device is
    /// rightly refused at once (`source-unavailable`, "its device list is empty").
    func waitUntilAccepting(timeout: Duration = .seconds(20)) async throws {
        try await fake.waitUntilAccepting(timeout: timeout)
        let fake = self.fake
        _ = await Task.detached { fake.waitUntilDeviceListed() }.value
    }

    /// Sends a signal to gpsd alone.
    @discardableResult
    func signalDaemon(_ signal: Int32) -> Bool {
        guard let daemon = fake.gpsdPID else { return false }
        return kill(daemon, signal) == 0
    }

    /// Waits until gpsfake has exited (it does once its gpsd died); returns whether it did in time.
    func waitForExit(timeout: Duration) async -> Bool {
        await fake.process.waitForExit(timeout: timeout) != nil
    }

    /// Ends gpsfake and gpsd and removes the shared memory gpsd left.
    func stop() {
        fake.stop()
    }
}
