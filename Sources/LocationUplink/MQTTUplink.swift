import Foundation
import LocationControl
import LocationCore
import Logging

/// An uplink to an MQTT broker: the fixes its consumer takes go into its outbox, and from there, oldest first
/// and at most ``UplinkEndpoint/window`` at a time, to the broker at QoS 1, retained (OwnTracks locations);
/// each leaves the outbox on its PUBACK. Live fixes wait behind a backlog and are never sent before it.
///
/// Region transitions go the same way from an outbox of their own (``EventOutbox``, `OUTBOX.events`) to
/// `owntracks/USER/DEVICE/event`, QoS 1, not retained, one at a time.
///
/// The connection's thread connects again (with backoff), and libmosquitto sends again what was in flight when
/// a connection was lost; a restart of locationd sends again what the outbox's cursor does not record as
/// acknowledged.
package final class MQTTUplink: Uplink {
    package let endpoint: UplinkEndpoint
    private let outbox: UplinkOutbox
    private let events: EventOutbox
    private let client: MQTTClient
    private let logger: Logger
    private let now: @Sendable () -> Date

    private struct Link {
        /// Message ids in flight and the outbox sequence each carries.
        var inFlight: [Int32: UInt64] = [:]
        /// The transition in flight: its message id and its sequence in the events' outbox.
        var eventInFlight: (id: Int32, sequence: UInt64)?
        /// Acknowledgements that came before `publish` returned their id.
        var early: Set<Int32> = []
        /// Replies to `reportLocation` in flight: their acknowledgements concern no fix of the outbox (taken
        /// for early ones, they could match a later message's reused id and drop it unsent).
        var replies: Set<Int32> = []
        var connected = false
        var problems = ConnectionProblems()
        /// Since when the oldest message in flight has waited for its acknowledgement.
        var waitingSince: Date?
        /// The connection was lost with messages in flight: libmosquitto sends them again once connected, and
        /// nothing newer goes before they are acknowledged (it would overtake them).
        var resending = false
        var lastAcknowledged: Date?
        /// Errors writing the outbox, since the last write that worked.
    }

    private let link = Locked(Link())
    /// The uplink as its connection's callbacks reach it: a cycle through the client, broken by ``stop()`` so
    /// that the uplink and its libmosquitto handle are freed.
    private let reference = Locked<MQTTUplink?>(nil)
    private static let refusal = "the broker refused the connection"
    /// Serializes pumping: one thread hands messages to libmosquitto at a time, in order.
    private let pumping = Locked(())

    /// Opens the outbox (`outboxPath`, or memory only) and prepares the connection; ``start()`` connects.
    package init(
        endpoint: UplinkEndpoint, outboxPath: String?, logger: Logger, now: @escaping @Sendable () -> Date = { Date() }
    ) throws(LocationError) {
        self.endpoint = endpoint
        self.logger = logger
        self.now = now
        let password = try endpoint.checkFiles()
        outbox = try UplinkOutbox.open(for: endpoint, path: outboxPath, receiver: "broker", logger: logger)
        events = try EventOutbox(path: outboxPath.map { $0 + ".events" })
        if let problem = events.problem { logger.warning("uplink \(endpoint.name): \(problem)") }
        let link = self.link
        let uplink = self.reference
        let options = MQTTClient.Options(
            host: endpoint.addressHost, port: endpoint.port, clientID: endpoint.clientID,
            username: endpoint.username, password: password, caFile: endpoint.caFile,
            will: (endpoint.topic, OwnTracksMessage.lastWill(connectedAt: now()), true), maxInflight: endpoint.window)
        let name = endpoint.name
        let handlers = MQTTClient.Handlers(
            connected: { code, reason in
                if code == 0 {
                    let (log, after) = link.withLock { link in
                        link.connected = true
                        return link.problems.connected()
                    }
                    if log {
                        logger.info("uplink \(name): connected to \(endpoint.host):\(endpoint.port)\(after.map { " (after: \($0))" } ?? "")")
                    }
                    guard let tracker = uplink.withLock({ $0 }) else { return }
                    // OwnTracks' commands to the device (the session is clean: subscribed on every connect).
                    tracker.client.subscribe(endpoint.topic + "/cmd", qos: 1)
                    tracker.pump()
                } else {
                    uplink.withLock { $0 }?.note(error: "\(Self.refusal): \(reason)")
                }
            },
            disconnected: { reason in
                let refused = link.withLock { link -> Bool in
                    defer {
                        link.connected = false
                        if !link.inFlight.isEmpty { link.resending = true }
                    }
                    return !link.connected && link.problems.current?.hasPrefix(Self.refusal) == true
                }
                // A broker that refused the connection closes it: the refusal is the problem to show.
                if !refused { uplink.withLock { $0 }?.note(error: reason) }
            },
            published: { messageID in uplink.withLock { $0 }?.acknowledged(messageID) },
            message: { topic, payload in
                guard topic == endpoint.topic + "/cmd" else { return }
                uplink.withLock { $0 }?.command(payload)
            })
        client = try MQTTClient(options: options, handlers: handlers)
        uplink.withLock { $0 = self }
    }

    /// Connects (in the background: a broker that is not there yet is tried again) and sends what waits.
    package func start() {
        client.start()
        pump()
    }

    /// Takes a fix the uplink's consumer delivered: journaled first, then sent behind what waits.
    package func take(_ location: Location) {
        outbox.take(location, accuracy: endpoint.accuracy, uplink: endpoint.name, logger: logger)
        pump()
    }

    /// Takes a region event: an enter or exit is journaled in the events' outbox, then sent (a dwell is not
    /// an OwnTracks message).
    package func take(_ event: RegionEvent) {
        guard endpoint.format == .owntracks, event.kind != .dwell else { return }
        events.take(event, uplink: endpoint.name, logger: logger)
        pump()
    }

    /// OwnTracks has no message for it: while still, the fixes it gets are at the stop's centroid
    /// (``StationaryDelivery``).
    package func take(_ event: MotionEvent) {}

    /// Where the newest fix comes from when a command asks for it (the consumer's manager: the receiver's
    /// latest, whether or not the uplink's policy sent it).
    package func answerReportsWith(_ latest: @escaping @Sendable () -> Location?) {
        latestFix.withLock { $0 = latest }
    }

    private let latestFix = Locked<(@Sendable () -> Location?)?>(nil)

    /// An OwnTracks command: `reportLocation` is answered at once with the newest fix, `"t":"r"`, beside the
    /// outbox (it is a reply, not the stream); other commands are not for a device like this one.
    private func command(_ payload: [UInt8]) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any],
            object["_type"] as? String == "cmd"
        else {
            logger.notice("uplink \(endpoint.name): a message on \(endpoint.topic)/cmd that is not an OwnTracks command was ignored")
            return
        }
        guard object["action"] as? String == "reportLocation" else {
            logger.notice("uplink \(endpoint.name): the OwnTracks command '\(ValueRange.printable(String(describing: object["action"] ?? "none")))' is not one locationd answers")
            return
        }
        guard let fix = latestFix.withLock({ $0 })?() else {
            logger.notice("uplink \(endpoint.name): reportLocation asked before any fix; it is answered by none")
            return
        }
        let payload = OwnTracksMessage.location(fix, trackerID: endpoint.trackerID, createdAt: now(), trigger: "r")
        switch client.publish(topic: endpoint.topic, payload: payload, qos: 1, retain: true) {
        case .success(let messageID):
            link.withLock { link in if link.early.remove(messageID) == nil { link.replies.insert(messageID) } }
        case .failure(let error):
            note(error: error.message)
        }
    }

    /// Hands the next fixes within the window to libmosquitto.
    private func pump() {
        // Not while the connection is down: messages queued in libmosquitto before a connection exists are
        // sent out of order once it does. What is in flight when a connection is lost, libmosquitto sends
        // again on the next one, after the connection's callback: everything newer waits here until those
        // are acknowledged, or it would go first.
        guard link.withLock({ $0.connected && !$0.resending }) else { return }
        pumping.withLock { _ in
            // The window counts what libmosquitto holds unacknowledged, not what the outbox still waits for:
            // fixes dropped from the outbox for room while in flight are still libmosquitto's to send, and a
            // window counted from the outbox would hand it more and more while the broker is stalled.
            let room = endpoint.window - link.withLock { $0.inFlight.count }
            guard room > 0 else { return }
            var entries = outbox.takeUnsent(window: endpoint.window)
            if entries.count > room {
                outbox.unsend(from: entries[room].sequence)
                entries.removeSubrange(room...)
            }
            for entry in entries {
                let payload = OwnTracksMessage.location(entry.location, trackerID: endpoint.trackerID, createdAt: now())
                switch client.publishNoting(topic: endpoint.topic, payload: payload, qos: 1, retain: true) {
                case .success(let (messageID, deferred)):
                    let acknowledgedAlready = link.withLock { link -> Bool in
                        if link.early.remove(messageID) != nil { return true }
                        if link.inFlight.isEmpty { link.waitingSince = now() }
                        link.inFlight[messageID] = entry.sequence
                        // The connection went down meanwhile: it is sent first on the next one, then the rest.
                        if deferred { link.resending = true }
                        return false
                    }
                    if acknowledgedAlready { outbox.acknowledge([entry.sequence]) }
                    if deferred {
                        outbox.unsend(from: entry.sequence + 1)
                        return
                    }
                case .failure(let error):
                    // Sent again by the next pump (the next fix, acknowledgement or connection).
                    outbox.unsend(from: entry.sequence)
                    note(error: error.message)
                    return
                }
            }
            pumpEvent()
        }
    }

    /// Hands the oldest waiting transition to libmosquitto, unless one is in flight.
    private func pumpEvent() {
        guard link.withLock({ $0.eventInFlight == nil }), let entry = events.takeUnsent() else { return }
        guard case .region(let event) = entry.event,
            let payload = OwnTracksMessage.transition(event, trackerID: endpoint.trackerID)
        else {
            events.acknowledge(entry.sequence, refused: true)
            return
        }
        switch client.publishNoting(topic: endpoint.topic + "/event", payload: payload, qos: 1, retain: false) {
        case .success(let (messageID, _)):
            let acknowledgedAlready = link.withLock { link -> Bool in
                if link.early.remove(messageID) != nil { return true }
                link.eventInFlight = (messageID, entry.sequence)
                return false
            }
            if acknowledgedAlready { events.acknowledge(entry.sequence) }
        case .failure(let error):
            events.unsend(entry.sequence)
            note(error: error.message)
        }
    }

    private func acknowledged(_ messageID: Int32) {
        let event = link.withLock { link -> UInt64? in
            guard let inFlight = link.eventInFlight, inFlight.id == messageID else { return nil }
            link.eventInFlight = nil
            return inFlight.sequence
        }
        if let event {
            events.acknowledge(event)
            pump()
            return
        }
        let sequence = link.withLock { link -> UInt64? in
            link.lastAcknowledged = now()
            link.waitingSince = link.inFlight.count > 1 ? link.lastAcknowledged : nil
            guard let sequence = link.inFlight.removeValue(forKey: messageID) else {
                if link.replies.remove(messageID) == nil { link.early.insert(messageID) }
                return nil
            }
            if link.inFlight.isEmpty { link.resending = false }
            return sequence
        }
        guard let sequence else { return }
        outbox.acknowledge([sequence])
        pump()
    }

    private func note(error: String) {
        let date = now()
        if link.withLock({ $0.problems.note(error, at: date) }) { logger.warning("uplink \(endpoint.name): \(error)") }
    }

    /// A broker that takes messages and acknowledges none (paused, overloaded) is a problem too, once the
    /// oldest in flight has waited this long.
    static let acknowledgementWait: TimeInterval = 10

    /// What `status` shows of the uplink.
    package var status: UplinkStatus {
        let counts = outbox.counts
        let eventCounts = events.counts
        let date = now()
        return link.withLock { link in
            var problem = link.problems.current
            var since = link.problems.since
            if problem == nil, counts.inFlight > 0, let waiting = link.waitingSince,
                date.timeIntervalSince(waiting) >= Self.acknowledgementWait
            {
                problem = "the broker has acknowledged nothing for \(Int(date.timeIntervalSince(waiting))) s"
                since = waiting
            }
            var status = UplinkStatus(
                name: endpoint.name, url: endpoint.text, connected: link.connected, queued: counts.queued,
                inFlight: counts.inFlight, acknowledged: counts.acknowledged, droppedFull: counts.droppedFull,
                lastError: problem, lastErrorSince: since.map { RFC3339.string(from: $0, fractionDigits: 3) },
                lastAcknowledged: link.lastAcknowledged.map { RFC3339.string(from: $0, fractionDigits: 3) }, outbox: outbox.path,
                outboxProblem: outbox.writeProblem.withLock { $0 })
            status.droppedOld = endpoint.maxAge == nil ? nil : counts.droppedOld
            status.events = endpoint.format == .owntracks ? UplinkStatus.Events(eventCounts) : nil
            if status.outboxProblem == nil { status.outboxProblem = events.writeProblem }
            return status
        }
    }

    /// Disconnects and closes the outbox; what was not acknowledged stays in it for the next start.
    package func stop() {
        client.stop()
        outbox.close()
        reference.withLock { $0 = nil }
    }
}
