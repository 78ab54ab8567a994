import Foundation
import LocationCore
import Synchronization
import Testing
@testable import LocationGPSD

/// A peer that is not a working gpsd must give a clear error, never a crash, a hang or a fix.
@Suite("gpsd source against broken servers")
struct BrokenServerTests {
    static let version = #"{"class":"VERSION","release":"3.22","rev":"3.22","proto_major":3,"proto_minor":14}"# + "\n"

    static func configuration(port: Int) -> GPSDConfiguration {
        GPSDConfiguration(
            host: "127.0.0.1", port: port, reconnectDelay: .milliseconds(50),
            maximumReconnectDelay: .milliseconds(200), watchdogTimeout: .seconds(1), epochSettle: .milliseconds(100))
    }

    static let scripts: [(name: String, bytes: [UInt8], ending: FakeGPSDServer.Ending)] = [
        ("garbage", Array((version + "this is not JSON at all\n\u{01}\u{02}\u{7f}\n{{{{\n").utf8) + [0xFF, 0xFE, 0x0A], .close),
        ("cut TPV line", Array((version + #"{"class":"TPV","device":"/dev/ttyX","mode":3,"time":"2024-05-01T06:00:00.000Z","lat":51.5"#).utf8), .close),
        ("cut line, held open", Array((version + #"{"class":"TPV","mode":3,"lat":51."#).utf8), .stayOpen),
        ("line longer than libgps's buffer", Array(version.utf8) + [UInt8](repeating: UInt8(ascii: "A"), count: 100_000) + [0x0A], .close),
        ("TPV with nonsense values", Array((version + #"{"class":"TPV","mode":3,"time":"not a time","lat":"north","lon":null}"# + "\n").utf8), .close),
    ]

    @Test(.timeLimit(.minutes(1)), arguments: scripts.map(\.name))
    func brokenPeer(_ name: String) async throws {
        let script = Self.scripts.first { $0.name == name }!
        let server = try FakeGPSDServer(script: script.bytes, ending: script.ending)
        defer { server.stop() }
        let source = try GPSDLocationSource(configuration: Self.configuration(port: server.port))
        let recorder = EventRecorder()
        recorder.start(source)
        let reported = await recorder.wait(timeout: .seconds(20)) { recorder in
            !recorder.errors.isEmpty && server.connections.load(ordering: .relaxed) >= 2
        }
        await recorder.stop()
        #expect(reported, "\(name): an error is reported and the source keeps reconnecting")
        #expect(recorder.locations.isEmpty, "\(name): nothing is delivered from a broken peer")
        let errors = recorder.errors
        #expect(errors.count == 1, "\(name): one error per outage, got \(errors)")
        if let error = errors.first {
            #expect(error.code == .sourceFailed, "\(name): \(error)")
            #expect(error.message.contains("127.0.0.1:\(server.port)"), "\(name): the error names the peer: \(error)")
        }
        print("\(name): \(errors.map(\.description))")
    }

    @Test(.timeLimit(.minutes(1)))
    func retriesWithBackoffNotInABusyLoop() async throws {
        let server = try FakeGPSDServer(script: Array("not gpsd\n".utf8), ending: .close)
        defer { server.stop() }
        let source = try GPSDLocationSource(configuration: Self.configuration(port: server.port))
        let recorder = EventRecorder()
        recorder.start(source)
        await recorder.wait(timeout: .seconds(2)) { _ in false }
        await recorder.stop()
        // 50, 100, 200, 200, ... ms between attempts: about a dozen in 2 s; a busy loop makes thousands.
        let attempts = server.connections.load(ordering: .relaxed)
        #expect((2...25).contains(attempts), "\(attempts) connection attempts in 2 s")
        #expect(recorder.errors.count == 1)
    }

    @Test(.timeLimit(.minutes(1)))
    func nobodyListening() async throws {
        let port = try GPSFake.freePort()
        let source = try GPSDLocationSource(configuration: Self.configuration(port: port))
        let recorder = EventRecorder()
        recorder.start(source)
        // Several attempts pass within a second at 50–200 ms backoff; still only one error.
        await recorder.wait(timeout: .seconds(2)) { _ in false }
        await recorder.stop()
        let errors = recorder.errors
        #expect(errors.count == 1)
        #expect(errors.first?.code == .sourceUnavailable)
        #expect(errors.first?.message.contains("cannot connect to gpsd at 127.0.0.1:\(port)") == true, "\(errors)")
        #expect(recorder.statuses.first == .connecting)
        #expect(recorder.statuses.contains(.unavailable))
    }
}
