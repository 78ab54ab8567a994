import Foundation
import LocationControl
import LocationCore
import Logging

/// Where a consumer's fixes leave the device: ``MQTTUplink`` (OwnTracks, every fix from an outbox),
/// ``HomeAssistantUplink`` (the latest fix only) or ``HTTPUplink`` (an OwnTracks Recorder or Traccar, every fix
/// from an outbox).
package protocol Uplink: Sendable {
    /// Where it sends, as configured.
    var endpoint: UplinkEndpoint { get }
    /// Connects (in the background; a receiver that is not there yet is tried again) and sends what waits.
    func start()
    /// Takes a fix the uplink's consumer delivered.
    func take(_ location: Location)
    /// Takes a region event the uplink's consumer delivered (those its receiver has a message for are sent).
    func take(_ event: RegionEvent)
    /// Takes a motion event the uplink's consumer delivered (a receiver with a field for it gets it).
    func take(_ event: MotionEvent)
    /// What `status` shows of it.
    var status: UplinkStatus { get }
    /// Disconnects; what is not acknowledged stays for the next start.
    func stop()
}

/// Makes the uplink an endpoint's format calls for.
package enum Uplinks {
    /// - Parameter outboxPath: Where an uplink that keeps an outbox keeps it (`nil`: in memory).
    package static func make(
        _ endpoint: UplinkEndpoint, outboxPath: String?, logger: Logger
    ) throws(LocationError) -> any Uplink {
        if endpoint.usesHTTP { return try HTTPUplink(endpoint: endpoint, outboxPath: outboxPath, logger: logger) }
        return switch endpoint.format {
        case .owntracks, .traccar: try MQTTUplink(endpoint: endpoint, outboxPath: outboxPath, logger: logger)
        case .homeassistant: try HomeAssistantUplink(endpoint: endpoint, logger: logger)
        }
    }

    /// How many fixes the outbox at `outbox` holds unacknowledged (read, not changed); nil when it cannot be
    /// read, or another locationd has it.
    package static func waitingCount(outbox: String) -> Int? {
        UplinkOutbox.waitingCount(path: outbox)
    }
}
