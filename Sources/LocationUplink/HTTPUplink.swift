import Foundation
import LocationControl
import LocationCore
import Logging

/// An uplink to an HTTP server: an OwnTracks Recorder (`POST /pub`, OwnTracks JSON with its topic) or Traccar
/// (its OsmAnd protocol's JSON body). The fixes its consumer takes go into its outbox; a thread of its own
/// posts them one at a time, oldest first, and each leaves the outbox on a 2xx answer.
///
/// What an answer means:
/// - 2xx: delivered.
/// - 400, 413, 415, 422 and the other 4xx not listed below: the server will never take this fix (a poison
///   message): it is dropped, counted, and the first of each status is logged; the next fix goes on.
/// - 401, 403, 404, 405, 407, 408, 421, 429 and 5xx, and no answer at all (refused, unreachable, timed out, TLS):
///   the server or its configuration, not the fix (a wrong password, path or device id would otherwise
///   drop every fix): the same fix is posted again after a backoff of 1 s doubling to 30 s.
///
/// Live fixes wait behind a backlog and are never sent before it: Traccar ignores events of late fixes.
///
/// For an OwnTracks Recorder, region transitions go the same way from an outbox of their own
/// (``EventOutbox``, `OUTBOX.events`), each before the fixes waiting then; Traccar draws its own geofences
/// and is sent none.
package final class HTTPUplink: Uplink {
    package let endpoint: UplinkEndpoint
    private let outbox: UplinkOutbox
    private let events: EventOutbox
    private let client: HTTPClient
    private let logger: Logger
    private let now: @Sendable () -> Date

    private struct Link {
        var problems = ConnectionProblems()
        var connected = false
        var lastAcknowledged: Date?
        var loggedRejections: Set<Int> = []
        var stopping = false
        var started = false
        /// A fix came (or the uplink stops): the sender looks again before its backoff ends.
        var wake = false
        /// When the next attempt is due after a failure.
        var retryAt: Date?
    }

    private let link = Locked(Link())
    private let condition = NSCondition()
    private let finished = DispatchSemaphore(value: 0)

    /// The longest wait between two attempts, and the first.
    static let longestBackoff: TimeInterval = 30
    static let firstBackoff: TimeInterval = 1

    /// Statuses that say the server or the uplink's configuration is wrong, or the server is busy, not that
    /// this fix is: the fix is posted again.
    static let retriedStatuses: Set<Int> = [401, 403, 404, 405, 407, 408, 421, 425, 429]

    /// Opens the outbox (`outboxPath`, or memory only) and prepares the connection; ``start()`` sends.
    package init(
        endpoint: UplinkEndpoint, outboxPath: String?, logger: Logger, now: @escaping @Sendable () -> Date = { Date() }
    ) throws(LocationError) {
        self.endpoint = endpoint
        self.logger = logger
        self.now = now
        let password = try endpoint.checkFiles()
        var headers: [String] = []
        if endpoint.format == .owntracks {
            // The Recorder reads the user and device from these headers or from u= and d=; both are sent.
            headers = ["X-Limit-U: \(endpoint.user)", "X-Limit-D: \(endpoint.device)"]
        }
        client = try HTTPClient(
            options: HTTPClient.Options(
                url: endpoint.requestURL, headers: headers, username: endpoint.username, password: password,
                caFile: endpoint.caFile, requestTimeout: ValueRange.duration(clampingSeconds: endpoint.timeout)))
        outbox = try UplinkOutbox.open(for: endpoint, path: outboxPath, receiver: "server", logger: logger)
        events = try EventOutbox(path: outboxPath.map { $0 + ".events" })
        if let problem = events.problem { logger.warning("uplink \(endpoint.name): \(problem)") }
    }

    /// Starts the sending thread.
    package func start() {
        let first = link.withLock { link -> Bool in
            defer { link.started = true }
            return !link.started && !link.stopping
        }
        guard first else { return }
        let thread = Thread { [self] in
            send()
            finished.signal()
        }
        thread.name = "uplink \(endpoint.name)"
        thread.start()
    }

    /// Takes a fix the uplink's consumer delivered: journaled first, then sent behind what waits.
    package func take(_ location: Location) {
        outbox.take(location, accuracy: endpoint.accuracy, uplink: endpoint.name, logger: logger)
        signal()
    }

    /// Takes a region event: for an OwnTracks Recorder, an enter or exit is journaled in the events' outbox,
    /// then posted before the fixes waiting.
    package func take(_ event: RegionEvent) {
        guard endpoint.format == .owntracks, event.kind != .dwell else { return }
        events.take(event, uplink: endpoint.name, logger: logger)
        signal()
    }

    /// OwnTracks and Traccar have no message for it: while still, the fixes they get are at the stop's
    /// centroid (``StationaryDelivery``), and Traccar tells motion itself.
    package func take(_ event: MotionEvent) {}

    /// What the sending thread posts next.
    private enum Item {
        case fix(UplinkOutbox.Entry)
        case event(EventOutbox.Entry, RegionEvent)
    }

    private func signal() {
        condition.lock()
        link.withLock { $0.wake = true }
        condition.signal()
        condition.unlock()
    }

    /// The sending thread: one post at a time, the oldest unsent fix first.
    private func send() {
        var backoff = Self.firstBackoff
        while true {
            guard let item = nextItem() else { return }
            let body: [UInt8]
            switch item {
            case .fix(let entry):
                body =
                    switch endpoint.format {
                    case .traccar: TraccarMessage.location(entry.location, deviceID: endpoint.device)
                    default:
                        OwnTracksMessage.location(
                            entry.location, trackerID: endpoint.trackerID, createdAt: now(), topic: endpoint.topic)
                    }
            case .event(let entry, let event):
                guard let message = OwnTracksMessage.transition(event, trackerID: endpoint.trackerID, topic: endpoint.topic + "/event") else {
                    events.acknowledge(entry.sequence, refused: true)
                    continue
                }
                body = message
            }
            let entry: UplinkOutbox.Entry
            switch item {
            case .fix(let fix): entry = fix
            case .event(let event, _):
                if post(body, event: event, backoff: &backoff) { continue }
                return
            }
            switch client.post(body) {
            case .cancelled:
                outbox.unsend(from: entry.sequence)
                return
            case .answered(let status, _) where (200...299).contains(status):
                backoff = Self.firstBackoff
                let (log, after) = link.withLock { link in
                    link.retryAt = nil
                    link.lastAcknowledged = now()
                    link.connected = true
                    return link.problems.connected()
                }
                outbox.acknowledge([entry.sequence])
                if log {
                    logger.info("uplink \(endpoint.name): the server at \(endpoint.host):\(endpoint.port) takes fixes\(after.map { " (after: \($0))" } ?? "")")
                }
            case .answered(let status, let answer) where (400...499).contains(status) && !Self.retriedStatuses.contains(status):
                backoff = Self.firstBackoff
                let first = link.withLock { link in
                    link.retryAt = nil
                    link.connected = true
                    // The server takes requests: what was wrong before is over (this fix is what it refused).
                    _ = link.problems.connected()
                    return link.loggedRejections.insert(status).inserted
                }
                outbox.acknowledge([entry.sequence], refused: true)
                if first {
                    logger.warning("uplink \(endpoint.name): the server refused the fix of \(RFC3339.string(from: entry.location.timestamp, fractionDigits: 3)) with \(status)\(answer.isEmpty ? "" : " (\(answer))"); it is dropped, and later refusals with \(status) are counted in status")
                }
            case .answered(let status, let answer):
                outbox.unsend(from: entry.sequence)
                // The server answers: it is reachable, and the problem is what it says.
                link.withLock { $0.connected = true }
                let hint =
                    switch status {
                    case 404 where endpoint.format == .traccar: "; is there a device with the identifier \(endpoint.device) in Traccar?"
                    case 300...399: "; an uplink follows no redirect: give the address it redirects to (curl -sI shows it as Location)"
                    case 401, 407: "; check the user name and the password file"
                    default: ""
                    }
                fail("the server answered \(status)\(answer.isEmpty ? "" : " (\(answer))")\(hint)", kind: "status \(status)", backoff: &backoff)
            case .failed(let reason, let kind):
                outbox.unsend(from: entry.sequence)
                link.withLock { $0.connected = false }
                fail("cannot reach \(endpoint.host):\(endpoint.port): \(reason)", kind: "failed: \(kind)", backoff: &backoff)
            }
        }
    }

    /// Posts a transition: it leaves its outbox on a 2xx, or refused on a 4xx that means it; otherwise it is
    /// posted again after the backoff. False once the uplink stops.
    private func post(_ body: [UInt8], event entry: EventOutbox.Entry, backoff: inout TimeInterval) -> Bool {
        switch client.post(body) {
        case .cancelled:
            events.unsend(entry.sequence)
            return false
        case .answered(let status, _) where (200...299).contains(status):
            backoff = Self.firstBackoff
            link.withLock { link in
                link.retryAt = nil
                link.connected = true
                _ = link.problems.connected()
            }
            events.acknowledge(entry.sequence)
        case .answered(let status, let answer) where (400...499).contains(status) && !Self.retriedStatuses.contains(status):
            backoff = Self.firstBackoff
            link.withLock { $0.retryAt = nil }
            events.acknowledge(entry.sequence, refused: true)
            logger.warning("uplink \(endpoint.name): the server refused a region transition with \(status)\(answer.isEmpty ? "" : " (\(answer))"); it is dropped")
        case .answered(let status, let answer):
            events.unsend(entry.sequence)
            link.withLock { $0.connected = true }
            fail("the server answered \(status)\(answer.isEmpty ? "" : " (\(answer))")", kind: "status \(status)", backoff: &backoff)
        case .failed(let reason, let kind):
            events.unsend(entry.sequence)
            link.withLock { $0.connected = false }
            fail("cannot reach \(endpoint.host):\(endpoint.port): \(reason)", kind: "failed: \(kind)", backoff: &backoff)
        }
        return true
    }

    /// Notes a failed attempt and schedules the next after `backoff`, which then doubles (to 30 s at most).
    private func fail(_ problem: String, kind: String? = nil, backoff: inout TimeInterval) {
        let date = now()
        let log = link.withLock { link in
            link.retryAt = date.addingTimeInterval(backoff)
            return link.problems.note(problem, kind: kind, at: date)
        }
        if log { logger.warning("uplink \(endpoint.name): \(problem); trying again, at most every \(Int(Self.longestBackoff)) s") }
        backoff = min(backoff * 2, Self.longestBackoff)
    }

    /// Waits for the next transition or fix to send (and for a backoff to end); `nil` once the uplink stops.
    private func nextItem() -> Item? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            let (stopping, retryAt) = link.withLock { link in
                link.wake = false
                return (link.stopping, link.retryAt)
            }
            if stopping { return nil }
            if let retryAt, retryAt > now() {
                _ = condition.wait(until: Date(timeIntervalSinceNow: retryAt.timeIntervalSince(now())))
                if link.withLock({ $0.stopping }) { return nil }
                if retryAt > now() { continue }
            }
            if let entry = events.takeUnsent() {
                if case .region(let event) = entry.event { return .event(entry, event) }
                events.acknowledge(entry.sequence, refused: true)
                continue
            }
            if let entry = outbox.takeUnsent(window: 1).first { return .fix(entry) }
            // Nothing waits: sleep until a fix comes (checked under the condition's lock, so none is missed).
            if !link.withLock({ $0.wake || $0.stopping }) { condition.wait() }
        }
    }

    /// What `status` shows of the uplink.
    package var status: UplinkStatus {
        let counts = outbox.counts
        let eventCounts = events.counts
        return link.withLock { link in
            var status = UplinkStatus(
                name: endpoint.name, url: endpoint.text, connected: link.connected, queued: counts.queued,
                inFlight: counts.inFlight, acknowledged: counts.acknowledged,
                droppedFull: counts.droppedFull, lastError: link.problems.current,
                lastErrorSince: link.problems.since.map { RFC3339.string(from: $0, fractionDigits: 3) },
                lastAcknowledged: link.lastAcknowledged.map { RFC3339.string(from: $0, fractionDigits: 3) }, outbox: outbox.path,
                outboxProblem: outbox.writeProblem.withLock { $0 })
            status.droppedOld = endpoint.maxAge == nil ? nil : counts.droppedOld
            status.droppedRefused = counts.refused
            status.nextAttempt = link.retryAt.map { RFC3339.string(from: $0, fractionDigits: 3) }
            if endpoint.format == .owntracks { status.events = UplinkStatus.Events(eventCounts) }
            if status.outboxProblem == nil { status.outboxProblem = events.writeProblem }
            return status
        }
    }

    /// Ends a post under way, stops the thread and closes the outbox; what was not acknowledged stays in it.
    package func stop() {
        let started = link.withLock { link -> Bool in
            link.stopping = true
            return link.started
        }
        client.cancel()
        condition.lock()
        condition.broadcast()
        condition.unlock()
        if started { finished.wait() }
        outbox.close()
    }
}
