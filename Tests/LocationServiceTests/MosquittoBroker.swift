import Foundation
import GPSDTestSupport
import LocationCore

/// A real mosquitto broker (Debian's) on a private loopback port, with persistence in its own folder and no
/// limit on what it queues for an offline subscriber, so that every message a test sends is there to count.
final class MosquittoBroker: Sendable {
    let port: Int
    /// A second listener with TLS (``init(directory:port:tls:)``), or nil.
    let tlsPort: Int?
    let directory: String
    private let process = Locked<ChildProcess?>(nil)

    /// With `tls`, a second listener on ``tlsPort`` serves TLS with the server certificate of `tls`.
    init(directory: String, port: Int? = nil, tls: TestCertificates? = nil) throws {
        self.directory = directory
        self.port = try port ?? LoopbackTCP.freePort()
        self.tlsPort = try tls.map { _ in try LoopbackTCP.freePort() }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // Run as root, mosquitto becomes the user `mosquitto`, who could not save its state in a folder of
        // the test's: it stays whoever runs the test.
        let user = getpwuid(getuid()).map { String(cString: $0.pointee.pw_name) } ?? "root"
        var configuration = """
            user \(user)
            per_listener_settings false
            listener \(self.port) 127.0.0.1
            """
        if let tls, let tlsPort {
            configuration += "\nlistener \(tlsPort) 127.0.0.1\ncertfile \(tls.serverCertificate)\nkeyfile \(tls.serverKey)"
        }
        configuration += """

            allow_anonymous true
            persistence true
            persistence_location \(directory)/
            max_queued_messages 0
            max_inflight_messages 0
            log_dest file \(directory)/mosquitto.log
            """
        try configuration.write(toFile: "\(directory)/mosquitto.conf", atomically: true, encoding: .utf8)
    }

    /// Starts the broker and waits until it accepts connections.
    func start() throws {
        let child = try ChildProcess(["mosquitto", "-c", "\(directory)/mosquitto.conf"])
        process.withLock { $0 = child }
        guard eventually(10, { LoopbackTCP.accepts(port: port) && tlsPort.map(LoopbackTCP.accepts(port:)) != false }) else {
            throw LocationError(.sourceUnavailable, "mosquitto did not listen on \(port): \(log)")
        }
    }

    /// Stops it as an operator would (SIGTERM: it saves its persistent state and exits).
    func stop() {
        let child = process.withLock { child -> ChildProcess? in
            defer { child = nil }
            return child
        }
        _ = child?.stop(signal: SIGTERM, grace: .seconds(10))
    }

    /// Stops it, then starts it again on the same port and state.
    func restart() throws {
        stop()
        try start()
    }

    /// Pauses or resumes it (SIGSTOP, SIGCONT): connections stay open, nothing is answered meanwhile.
    func pause(_ paused: Bool) {
        _ = process.withLock { $0 }?.signal(paused ? SIGSTOP : SIGCONT)
    }

    var log: String { (try? String(contentsOfFile: "\(directory)/mosquitto.log", encoding: .utf8)) ?? "" }

    deinit { stop() }
}

/// `mosquitto_sub` with a persistent session (a fixed client id, QoS 1), so that it gets every message
/// published while it or the broker was away; what it prints goes to a file.
final class MosquittoSubscriber: Sendable {
    let output: String
    private let process: ChildProcess

    init(broker: MosquittoBroker, topic: String, id: String = "test-subscriber") throws {
        output = broker.directory + "/\(id).out"
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let command = "exec mosquitto_sub -h 127.0.0.1 -p \(broker.port) -t '\(topic)' -t \(Self.probeTopic) -q 1 -c -i \(id) -v > '\(output)'"
        process = try ChildProcess(["sh", "-c", command])
        // Subscribed once a probe it was sent arrives: messages published from then on are queued for it.
        let port = broker.port
        let subscribed = eventually(10) {
            _ = try? ChildProcess(["mosquitto_pub", "-h", "127.0.0.1", "-p", "\(port)", "-t", Self.probeTopic, "-m", "{}"]).wait()
            return self.text.contains(Self.probeTopic)
        }
        guard subscribed else { throw LocationError(.sourceUnavailable, "mosquitto_sub did not subscribe: \(text)") }
    }

    var text: String { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }

    /// Where the probe that shows the subscription is up goes.
    static let probeTopic = "test/probe"

    /// The messages received (topic and payload), oldest first, without mosquitto_sub's debug lines.
    var messages: [(topic: String, payload: [String: Any])] {
        text.split(separator: "\n").compactMap { line in
            guard let space = line.firstIndex(of: " "), !line.hasPrefix(Self.probeTopic) else { return nil }
            let topic = String(line[..<space])
            guard let object = try? JSONSerialization.jsonObject(with: Data(line[line.index(after: space)...].utf8)) as? [String: Any]
            else { return nil }
            return (topic, object)
        }
    }

    /// The fix times (`tst`) of the OwnTracks locations received, in order of arrival.
    var locationTimes: [Int] {
        messages.compactMap { $0.payload["_type"] as? String == "location" ? $0.payload["tst"] as? Int : nil }
    }

    deinit { process.stop() }
}
