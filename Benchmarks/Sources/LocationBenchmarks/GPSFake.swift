import Foundation
import GPSDTestSupport

/// A private gpsd fed by gpsfake from a generated 10 Hz capture, on its own port. ``stop()`` ends gpsfake,
/// its gpsd and the shared memory that gpsd created (``GPSFakeProcess``), and removes the capture.
package final class GPSFake: Sendable {
    private let fake: GPSFakeProcess
    private let capture: URL

    /// gpsd's TCP port on 127.0.0.1.
    package var port: Int { fake.port }

    /// Whether gpsfake and gpsd are installed.
    package static var isInstalled: Bool { GPSFakeProcess.isInstalled }

    private init(fake: GPSFakeProcess, capture: URL) {
        self.fake = fake
        self.capture = capture
    }

    /// Writes a capture of `epochs` 10 Hz epochs, starts gpsfake on a free port and returns as soon as the
    /// port accepts connections (sentences sent before the first client watches are lost).
    package static func start(epochs: Int) throws -> GPSFake {
        let capture = try writeSyntheticCapture(epochs: epochs)
        let fake: GPSFakeProcess
        do {
            fake = try GPSFakeProcess(capture: capture.path, options: ["-c", "0.05"])
        } catch {
            try? FileManager.default.removeItem(at: capture)
            throw error
        }
        let started = GPSFake(fake: fake, capture: capture)
        do {
            try fake.waitUntilAccepting(timeout: .seconds(20))
        } catch {
            started.stop()
            throw error
        }
        return started
    }

    /// Stops gpsfake and its gpsd, removes the capture and the gpsd's shared-memory segments.
    package func stop() {
        fake.stop()
        try? FileManager.default.removeItem(at: capture)
    }
}
