internal import CMosquitto
import Foundation
import LocationCore

/// One connection to an MQTT broker through libmosquitto, run on a thread of its own: it connects, connects
/// again with backoff, and calls back on that thread; libmosquitto sends again what was in flight when a
/// connection was lost.
///
/// libmosquitto keeps messages in memory only; the uplink's outbox is what survives a crash. This type only
/// sends and tells what the broker acknowledged.
final class MQTTClient: @unchecked Sendable {
    // @unchecked: `handle` is libmosquitto's, whose publish, subscribe and disconnect are safe to call from any
    // thread while its own thread runs (it locks internally); `handlers` is set once in `init` and never
    // changed; the one mutable flag is behind a lock.

    /// How to reach the broker and who to be there.
    struct Options: Sendable {
        var host: String
        var port: Int
        var clientID: String
        var username: String?
        var password: String?
        /// A CA file for `mqtts://`: the broker's certificate must chain to it.
        var caFile: String?
        var keepalive: Int32 = 60
        /// A message the broker publishes if the connection is lost without a goodbye.
        var will: (topic: String, payload: [UInt8], retain: Bool)?
        /// How many QoS 1 messages may wait for their acknowledgement at once.
        var maxInflight: Int
    }

    /// What the client tells, on libmosquitto's thread.
    struct Handlers: Sendable {
        /// A connection was answered: 0 is accepted, else the broker's reason (`connack` code).
        var connected: @Sendable (_ code: Int32, _ reason: String) -> Void
        /// The connection was lost (an unexpected code) or closed.
        var disconnected: @Sendable (_ reason: String) -> Void
        /// The broker acknowledged the message with this id (PUBACK).
        var published: @Sendable (_ messageID: Int32) -> Void
        /// A message arrived on a subscribed topic.
        var message: @Sendable (_ topic: String, _ payload: [UInt8]) -> Void
    }

    private let handle: OpaquePointer
    private let handlers: Handlers
    private let running = Locked(false)
    /// When the current connection was accepted (CONNACK); `nil` while none is.
    private let accepted = Locked<ContinuousClock.Instant?>(nil)
    /// Whether the disconnect callback told of the end of the current attempt.
    private let endTold = Locked(false)
    /// Set by ``stop()``: the network loop ends at this time at the latest.
    private let stopDeadline = Locked<ContinuousClock.Instant?>(nil)
    /// Wakes the connection's thread from its wait before connecting again (to stop).
    private let wake = DispatchSemaphore(value: 0)
    /// Signalled when the connection's thread ends.
    private let finished = DispatchSemaphore(value: 0)

    private static let libraryReady: Void = { mosquitto_lib_init() }()

    /// Creates the client (not connected yet).
    init(options: Options, handlers: Handlers) throws(LocationError) {
        Self.libraryReady
        guard let handle = mosquitto_new(options.clientID, true, nil) else {
            throw LocationError(.sourceUnavailable, "cannot create an MQTT client: \(String(cString: strerror(errno)))")
        }
        self.handle = handle
        self.handlers = handlers
        self.options = options
        mosquitto_user_data_set(handle, Unmanaged.passUnretained(self).toOpaque())
        do throws(LocationError) {
            try check(mosquitto_int_option(handle, MOSQ_OPT_PROTOCOL_VERSION, Int32(MQTT_PROTOCOL_V311)), "set the protocol")
            try check(mosquitto_int_option(handle, MOSQ_OPT_TCP_NODELAY, 1), "set TCP_NODELAY")
            // The network loop runs on a thread of ours and publishing happens on others: libmosquitto must
            // then hand packets to the loop rather than write them from the caller's thread.
            try check(mosquitto_threaded_set(handle, true), "use threads")
            try check(mosquitto_max_inflight_messages_set(handle, UInt32(max(1, options.maxInflight))), "set the in-flight window")
                if let username = options.username {
                try check(mosquitto_username_pw_set(handle, username, options.password), "set the user name")
            }
            if let will = options.will {
                try check(
                    will.payload.withUnsafeBytes {
                        mosquitto_will_set(handle, will.topic, Int32($0.count), $0.baseAddress, 1, will.retain)
                    }, "set the will")
            }
            if let caFile = options.caFile {
                try check(mosquitto_tls_set(handle, caFile, nil, nil, nil, nil), "use the CA file \(caFile)")
            }
        } catch {
            mosquitto_destroy(handle)
            throw error
        }
        mosquitto_connect_callback_set(handle) { _, context, code in
            guard let client = MQTTClient.client(context) else { return }
            if code == 0 { client.accepted.withLock { $0 = ContinuousClock.now } }
            client.handlers.connected(code, String(cString: mosquitto_connack_string(code)))
        }
        mosquitto_disconnect_callback_set(handle) { _, context, code in
            guard let client = MQTTClient.client(context) else { return }
            // A close this side asked for (code 0) is not a problem to tell.
            guard code != 0, client.running.withLock({ $0 }) else { return }
            client.endTold.withLock { $0 = true }
            client.handlers.disconnected(
                code == MOSQ_ERR_CONN_LOST.rawValue ? "the connection was lost" : "the connection was lost: \(MQTTClient.describe(code))")
        }
        mosquitto_publish_callback_set(handle) { _, context, messageID in
            MQTTClient.client(context)?.handlers.published(messageID)
        }
        mosquitto_message_callback_set(handle) { _, context, message in
            guard let client = MQTTClient.client(context), let message = message?.pointee else { return }
            let topic = message.topic.map { String(cString: $0) } ?? ""
            let payload = message.payload.map {
                Array(UnsafeRawBufferPointer(start: $0, count: Int(message.payloadlen)))
            } ?? []
            client.handlers.message(topic, payload)
        }
    }

    private let options: Options

    private static func client(_ context: UnsafeMutableRawPointer?) -> MQTTClient? {
        context.map { Unmanaged<MQTTClient>.fromOpaque($0).takeUnretainedValue() }
    }

    private func check(_ code: Int32, _ what: String) throws(LocationError) {
        guard code == MOSQ_ERR_SUCCESS.rawValue else {
            throw LocationError(.invalidConfiguration, "cannot \(what) for the MQTT client: \(Self.describe(code))")
        }
    }

    /// libmosquitto's words for an error code (the system's for `MOSQ_ERR_ERRNO`).
    static func describe(_ code: Int32) -> String {
        guard code == MOSQ_ERR_ERRNO.rawValue else { return String(cString: mosquitto_strerror(code)) }
        let number = errno
        return number == 0 ? "the broker closed it" : String(cString: strerror(number))
    }

    /// Starts the connection's thread: it connects, and while the broker is not there (at the start too) or
    /// the connection is lost, it tries again after a delay that doubles up to 30 s.
    func start() {
        let started = running.withLock { running -> Bool in
            defer { running = true }
            return !running
        }
        guard started else { return }
        let thread = Thread { [self] in runConnection() }
        thread.name = "mqtt \(options.host):\(options.port)"
        thread.start()
    }

    /// The connection's thread. libmosquitto's own thread (`mosquitto_loop_start`) does not try again when
    /// the first connection fails, so this one does what it does otherwise: run the network loop, and connect
    /// again after a delay when the connection is lost. The delay starts again from the shortest only after a
    /// connection that lasted: a broker that accepts and then drops every connection is tried less and less.
    private func runConnection() {
        var backoff = ReconnectBackoff(initial: .seconds(1), maximum: .seconds(30))
        var first = true
        while running.withLock({ $0 }) {
            // The CA file replaced since the start by something that is not a file: not handed to libmosquitto.
            if let caFile = options.caFile, let problem = UplinkEndpoint.caFileProblem(caFile) {
                handlers.disconnected("cannot connect to \(options.host):\(options.port): \(problem)")
                _ = wake.wait(timeout: .now() + backoff.nextDelay().seconds)
                continue
            }
            let code = first
                ? mosquitto_connect_async(handle, options.host, Int32(options.port), options.keepalive)
                : mosquitto_reconnect_async(handle)
            if code == MOSQ_ERR_SUCCESS.rawValue {
                first = false
                let began = ContinuousClock.now
                var gaveUp = false
                // Until the connection ends (a lost connection returns here; its callback told why) or, once
                // stopping, until the goodbye is written.
                var loop = MOSQ_ERR_SUCCESS.rawValue
                endTold.withLock { $0 = false }
                while loop == MOSQ_ERR_SUCCESS.rawValue {
                    loop = mosquitto_loop(handle, 200, 1)
                    let now = ContinuousClock.now
                    if let deadline = stopDeadline.withLock({ $0 }), now > deadline { break }
                    // A broker that takes the connection and never answers it: given up on, and tried again.
                    if !gaveUp, accepted.withLock({ $0 }) == nil, now - began > Self.answerTimeout {
                        gaveUp = true
                        handlers.disconnected("the broker at \(options.host):\(options.port) did not answer the connection within \(Int(Self.answerTimeout.seconds)) s")
                        mosquitto_disconnect(handle)
                    }
                }
                // A connection that ended before the broker answered it (a TLS handshake refused: the broker's
                // certificate not signed by the CA file, or a name that does not match it) calls no disconnect
                // callback: the loop's code is the only word of it.
                if !gaveUp, loop != MOSQ_ERR_SUCCESS.rawValue, accepted.withLock({ $0 }) == nil, !endTold.withLock({ $0 }),
                    running.withLock({ $0 }), stopDeadline.withLock({ $0 }) == nil
                {
                    handlers.disconnected("cannot connect to \(options.host):\(options.port): \(Self.describe(loop))")
                }
                if let since = accepted.withLock({ $0 }), ContinuousClock.now - since >= Self.lastingConnection { backoff.reset() }
                accepted.withLock { $0 = nil }
            } else {
                // A host name that does not resolve, a refused connection: said once per problem by the uplink.
                handlers.disconnected("cannot connect to \(options.host):\(options.port): \(Self.describe(code))")
                if code != MOSQ_ERR_ERRNO.rawValue, code != MOSQ_ERR_EAI.rawValue, code != MOSQ_ERR_NO_CONN.rawValue {
                    first = true
                }
            }
            guard running.withLock({ $0 }) else { break }
            _ = wake.wait(timeout: .now() + backoff.nextDelay().seconds)
        }
        finished.signal()
    }

    /// How long a broker may take to answer a connection before it is given up on.
    static let answerTimeout: Duration = .seconds(10)
    /// How long a connection must last for the delay before the next one to start again from the shortest.
    static let lastingConnection: Duration = .seconds(30)

    /// Queues a message; returns its id (the acknowledgement names it) or libmosquitto's reason.
    func publish(topic: String, payload: [UInt8], qos: Int32, retain: Bool) -> Result<Int32, LocationError> {
        publishNoting(topic: topic, payload: payload, qos: qos, retain: retain).map(\.id)
    }

    /// Queues a message; returns its id, and whether it waits for the next connection (the connection was
    /// down: libmosquitto sends it once one is up, before anything published after it there).
    func publishNoting(
        topic: String, payload: [UInt8], qos: Int32, retain: Bool
    ) -> Result<(id: Int32, deferred: Bool), LocationError> {
        var messageID: Int32 = 0
        let code = payload.withUnsafeBytes {
            mosquitto_publish(handle, &messageID, topic, Int32($0.count), $0.baseAddress, qos, retain)
        }
        // At QoS 1 a message is queued, with its id, also while the connection is down; libmosquitto then
        // answers NO_CONN and sends it once connected. Publishing it again would send it twice.
        if code == MOSQ_ERR_NO_CONN.rawValue, qos > 0, messageID != 0 { return .success((messageID, true)) }
        guard code == MOSQ_ERR_SUCCESS.rawValue else {
            return .failure(LocationError(.sourceUnavailable, "cannot publish on \(topic): \(Self.describe(code))"))
        }
        return .success((messageID, false))
    }

    /// Subscribes to `topic` (call again after each connect: the session is clean).
    func subscribe(_ topic: String, qos: Int32) {
        _ = mosquitto_subscribe(handle, nil, topic, qos)
    }

    /// Disconnects (a clean goodbye, written before the connection closes: the broker then does not publish
    /// the will) and ends the thread; in-flight messages stay in the caller's outbox.
    func stop() {
        let wasRunning = running.withLock { running -> Bool in
            defer { running = false }
            return running
        }
        guard wasRunning else { return }
        // The network loop goes on until the DISCONNECT (and what was queued before it) is written, or 2 s.
        stopDeadline.withLock { $0 = ContinuousClock.now + .seconds(2) }
        mosquitto_disconnect(handle)
        wake.signal()
        _ = finished.wait(timeout: .now() + 5)
    }

    deinit {
        stop()
        mosquitto_destroy(handle)
    }
}
