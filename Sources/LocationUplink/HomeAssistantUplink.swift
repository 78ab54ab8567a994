import Foundation
import LocationControl
import LocationCore
import Logging

/// A Home Assistant device tracker over MQTT discovery: Home Assistant takes the last message it received as
/// the truth and ignores fix times, so this uplink sends **the latest fix only**, never a backlog.
///
/// On each connection it publishes (retained, QoS 1) `online` on the availability topic, the discovery
/// config on `homeassistant/device_tracker/locationd_DEVICE/config`, and the newest fix on the attributes
/// topic `locationd/DEVICE/attributes`; it publishes the config again whenever Home Assistant announces
/// `online` on `homeassistant/status` (it has restarted). A fix that comes while one is in flight replaces
/// whatever waited: once the broker acknowledged the one in flight, the newest goes. The will is `offline`
/// on the availability topic. Nothing is journaled: the broker keeps the latest retained.
///
/// Regions become zones: the discovery config names a state topic, `locationd/DEVICE/state`, on which the
/// uplink publishes (retained, QoS 1) the name of the region last entered and not left (a region named
/// `home` is Home Assistant's home), or `None` when it is in none, which gives the state back to Home
/// Assistant's own zones and the GPS position. It is published again on every connection, from the regions'
/// states the consumer restored, so a state lost in flight is repaired by the next connection.
package final class HomeAssistantUplink: Uplink {
    package let endpoint: UplinkEndpoint
    private let client: MQTTClient
    private let logger: Logger
    private let now: @Sendable () -> Date

    private struct State {
        var connected = false
        /// The newest fix not yet sent.
        var waiting: Location?
        /// The attributes message in flight, and its fix.
        var inFlight: (id: Int32, fix: Location)?
        /// Acknowledgements that came before `publish` returned their id.
        var early: Set<Int32> = []
        /// Availability and discovery messages in flight (their acknowledgements change nothing).
        var announced: Set<Int32> = []
        var acknowledged = 0
        var problems = ConnectionProblems()
        var lastAcknowledged: Date?
        /// The regions inside, in the order they were entered: the last is the zone.
        var inside: [String] = []
        /// The motion state, once the consumer's detector has said one.
        var motion: MotionState?
        /// The newest fix sent (or in flight): sent again when the motion state changes.
        var newest: Location?
    }

    private let state = Locked(State())
    /// The uplink as its connection's callbacks reach it: a cycle through the client, broken by ``stop()`` so
    /// that the uplink and its libmosquitto handle are freed.
    private let reference = Locked<HomeAssistantUplink?>(nil)

    /// Home Assistant's discovery prefix and its birth topic.
    static let statusTopic = "homeassistant/status"
    var configTopic: String { "homeassistant/device_tracker/locationd_\(endpoint.device)/config" }
    var availabilityTopic: String { "locationd/\(endpoint.device)/availability" }
    var stateTopic: String { "locationd/\(endpoint.device)/state" }
    /// What the state topic says when the tracker is in no region of ours (Home Assistant's default
    /// `payload_reset`).
    package static let noZone = "None"

    package init(endpoint: UplinkEndpoint, logger: Logger, now: @escaping @Sendable () -> Date = { Date() }) throws(LocationError) {
        self.endpoint = endpoint
        self.logger = logger
        self.now = now
        let password = try endpoint.checkFiles()
        let uplink = self.reference
        let state = self.state
        let name = endpoint.name
        let options = MQTTClient.Options(
            host: endpoint.addressHost, port: endpoint.port, clientID: endpoint.clientID,
            username: endpoint.username, password: password, caFile: endpoint.caFile,
            will: ("locationd/\(endpoint.device)/availability", Array("offline".utf8), true), maxInflight: 10)
        let handlers = MQTTClient.Handlers(
            connected: { code, reason in
                guard let tracker = uplink.withLock({ $0 }) else { return }
                guard code == 0 else {
                    tracker.note(error: "the broker refused the connection: \(reason)")
                    return
                }
                let (log, after) = state.withLock { state in
                    state.connected = true
                    return state.problems.connected()
                }
                if log {
                    logger.info("uplink \(name): connected to \(endpoint.host):\(endpoint.port)\(after.map { " (after: \($0))" } ?? "")")
                }
                tracker.announce()
                tracker.send()
            },
            disconnected: { reason in
                let refused = state.withLock { state -> Bool in
                    defer { state.connected = false }
                    return !state.connected && state.problems.current?.hasPrefix("the broker refused") == true
                }
                // A broker that refused the connection closes it: the refusal is the problem to show.
                if !refused { uplink.withLock { $0 }?.note(error: reason) }
            },
            published: { messageID in uplink.withLock { $0 }?.acknowledged(messageID) },
            message: { topic, payload in
                // Home Assistant started again: it reads discovery anew.
                if topic == Self.statusTopic, payload == Array("online".utf8) { uplink.withLock { $0 }?.announce() }
            })
        client = try MQTTClient(options: options, handlers: handlers)
        uplink.withLock { $0 = self }
    }

    package func start() {
        client.start()
    }

    package func take(_ location: Location) {
        if let accuracy = endpoint.accuracy, let reported = location.horizontalAccuracy, reported > accuracy { return }
        state.withLock { state in
            // Only ever newer: a fix older than one already taken would move the tracker back.
            if let newest = state.waiting ?? state.inFlight?.fix, location.timestamp <= newest.timestamp { return }
            state.waiting = location
        }
        send()
    }

    /// Takes a region event: an enter makes the region the zone; an exit of the zone gives the state back
    /// (to the region entered before it and still inside, or to Home Assistant). Dwells change nothing.
    package func take(_ event: RegionEvent) {
        let changed = state.withLock { state -> Bool in
            let before = state.inside.last
            switch event.kind {
            case .enter:
                state.inside.removeAll { $0 == event.region }
                state.inside.append(event.region)
            case .exit: state.inside.removeAll { $0 == event.region }
            case .dwell: return false
            }
            return state.inside.last != before
        }
        if changed { publishZone() }
    }

    /// Takes a motion event: the attributes say `"motion":"stationary"|"moving"` from now on, and the newest
    /// fix is sent again with it.
    package func take(_ event: MotionEvent) {
        let resend = state.withLock { state -> Bool in
            guard state.motion != event.state else { return false }
            state.motion = event.state
            if state.waiting == nil, let newest = state.newest { state.waiting = newest }
            return true
        }
        if resend { send() }
    }

    /// The regions the tracker is inside when the uplink starts (their states restored from a previous
    /// run): the zone it publishes at its first connection.
    package func restoreZones(inside regions: [String]) {
        state.withLock { $0.inside = regions }
    }

    /// The zone the state topic says now.
    var zone: String? { state.withLock { $0.inside.last } }

    /// Publishes the zone (retained); its acknowledgement changes nothing.
    private func publishZone() {
        guard state.withLock({ $0.connected }) else { return }
        let payload = Array((zone ?? Self.noZone).utf8)
        switch client.publish(topic: stateTopic, payload: payload, qos: 1, retain: true) {
        case .success(let messageID):
            state.withLock { state in if state.early.remove(messageID) == nil { state.announced.insert(messageID) } }
        case .failure(let error):
            note(error: error.message)
        }
    }

    /// Availability, then discovery, retained; and the subscription to Home Assistant's birth message.
    private func announce() {
        client.subscribe(Self.statusTopic, qos: 1)
        defer { publishZone() }
        for (topic, payload) in [(availabilityTopic, Array("online".utf8)), (configTopic, discoveryConfig)] {
            switch client.publish(topic: topic, payload: payload, qos: 1, retain: true) {
            case .success(let messageID):
                state.withLock { state in if state.early.remove(messageID) == nil { state.announced.insert(messageID) } }
            case .failure(let error):
                note(error: error.message)
            }
        }
    }

    /// Sends the newest waiting fix unless one is in flight.
    private func send() {
        let next = state.withLock { state -> Location? in
            guard state.connected, state.inFlight == nil, let waiting = state.waiting else { return nil }
            state.waiting = nil
            return waiting
        }
        guard let next else { return }
        let motion = state.withLock { state in
            state.newest = next
            return state.motion
        }
        switch client.publish(topic: endpoint.topic, payload: Self.attributes(of: next, motion: motion), qos: 1, retain: true) {
        case .success(let messageID):
            let acknowledgedAlready = state.withLock { state -> Bool in
                if state.early.remove(messageID) != nil { return true }
                state.inFlight = (messageID, next)
                return false
            }
            if acknowledgedAlready { finish(next) }
        case .failure(let error):
            state.withLock { state in if state.waiting == nil { state.waiting = next } }
            note(error: error.message)
        }
    }

    private func acknowledged(_ messageID: Int32) {
        let fix = state.withLock { state -> Location? in
            guard let inFlight = state.inFlight, inFlight.id == messageID else {
                // Availability and discovery are acknowledged too; any other id is not known yet: early.
                if state.announced.remove(messageID) == nil { state.early.insert(messageID) }
                return nil
            }
            state.inFlight = nil
            return inFlight.fix
        }
        guard let fix else { return }
        finish(fix)
    }

    private func finish(_ fix: Location) {
        state.withLock { state in
            state.acknowledged += 1
            state.lastAcknowledged = now()
        }
        send()
    }

    private func note(error: String) {
        let date = now()
        if state.withLock({ $0.problems.note(error, at: date) }) { logger.warning("uplink \(endpoint.name): \(error)") }
    }

    package var status: UplinkStatus {
        var status = state.withLock { state in
            UplinkStatus(
                name: endpoint.name, url: endpoint.text, connected: state.connected,
                queued: (state.waiting == nil ? 0 : 1) + (state.inFlight == nil ? 0 : 1),
                inFlight: state.inFlight == nil ? 0 : 1, acknowledged: state.acknowledged, droppedFull: 0,
                lastError: state.problems.current, lastErrorSince: state.problems.since.map { RFC3339.string(from: $0, fractionDigits: 3) },
                lastAcknowledged: state.lastAcknowledged.map { RFC3339.string(from: $0, fractionDigits: 3) }, outbox: nil)
        }
        status.zone = zone
        return status
    }

    package func stop() {
        // Said before the goodbye: a clean stop publishes no will.
        _ = client.publish(topic: availabilityTopic, payload: Array("offline".utf8), qos: 1, retain: true)
        client.stop()
        reference.withLock { $0 = nil }
    }

    /// The discovery config: a GPS device tracker whose position comes from the attributes topic.
    var discoveryConfig: [UInt8] {
        let id = "locationd_\(endpoint.device)"
        let object: [String: Any] = [
            "name": endpoint.device,
            "unique_id": id,
            "object_id": id,
            "source_type": "gps",
            "json_attributes_topic": endpoint.topic,
            "state_topic": stateTopic,
            "payload_reset": Self.noZone,
            "availability_topic": availabilityTopic,
            "payload_available": "online",
            "payload_not_available": "offline",
            "device": [
                "identifiers": [id], "name": endpoint.device, "manufacturer": "swift-location", "model": "locationd",
            ] as [String: Any],
        ]
        return (try? Array(JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))) ?? []
    }

    /// The attributes Home Assistant reads a GPS position from (`latitude`, `longitude`, `gps_accuracy`),
    /// with the altitude, speed (m/s), course and the fix time where known, and the motion state when the
    /// consumer detects it.
    static func attributes(of fix: Location, motion: MotionState? = nil) -> [UInt8] {
        var object: [String: Any] = [
            "latitude": fix.latitude, "longitude": fix.longitude,
            "gps_accuracy": OwnTracksMessage.accuracy(of: fix),
            "timestamp": RFC3339.string(from: fix.timestamp),
        ]
        if let altitude = fix.altitude, altitude.isFinite { object["altitude"] = altitude }
        if let speed = fix.speed, speed.isFinite { object["speed"] = speed }
        if let course = fix.course, course.isFinite { object["course"] = course }
        if let motion { object["motion"] = motion.rawValue }
        return (try? Array(JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))) ?? []
    }
}
