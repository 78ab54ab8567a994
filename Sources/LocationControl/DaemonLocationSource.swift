import Foundation
import LocationCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A `LocationSource` that runs an app's `LocationManager` through `locationd`: the daemon's shared
/// receiver, the app's own session in it, and the fixes the daemon held for the app while its process was gone.
///
/// Give it to the manager as its source:
///
/// ```swift
/// let application = Application()
/// var configuration = LocationManagerConfiguration()
/// configuration.journalPath = "/var/lib/tracker/held.journal"   // the fixes it holds survive a crash
/// let manager = try LocationManager(
///     source: try DaemonLocationSource(app: "tracker"), application: application, configuration: configuration)
/// manager.delegate = tracker
/// try application.finishLaunching()
/// manager.startUpdatingLocation()
/// ```
///
/// It is an ordinary source: it follows the manager's acquisition mode, so the manager holds, journals and
/// flushes the app's fixes as it does with a direct gpsd source. While the manager runs it, it is the app's
/// own connection to its session (`open` with `attach`):
/// - continuous mode puts the session in the foreground (`active`); duty-cycled mode puts it in the
///   background with the background location mode on, at the duty cycle's interval and accuracy, so the
///   daemon delivers what the manager asked for and the manager decides what to hold;
/// - if the process dies, the daemon notices the connection close and goes on acquiring at the app's last
///   background interval, holding the fixes, journaled; when the app runs this source again they come as one
///   hand-over (`LocationSourceEvent.held(_:)`), and the daemon lets go of them only when the app's
///   delegate has had them.
///
/// Stopping the updates detaches from the session and stops its updates: nothing is held for an app that
/// stopped.
public final class DaemonLocationSource: LocationSource {
    /// The app's id in locationd.
    public let app: String
    /// The control socket.
    public let socketPath: String
    /// The policy the app's session is given when the source starts (the daemon's defaults for what it
    /// leaves out). The manager's mode decides the session's state, background interval and accuracy.
    public let policy: AppPolicy
    /// How long the daemon has to answer the requests that open the session.
    public static let openTimeout: Duration = .seconds(5)

    /// A short name for logs and status: `locationd APP at SOCKET`.
    public var name: String { "locationd \(app) at \(socketPath)" }

    /// Creates the source for the app `app`.
    ///
    /// - Parameters:
    ///   - app: The app's id (1 to 64 of `A-Z a-z 0-9 . _ -`).
    ///   - socket: locationd's control socket; by default `$XDG_RUNTIME_DIR/locationd/control.sock`, else
    ///     `/run/locationd/control.sock`.
    ///   - policy: The app's own policy in its session.
    /// - Throws: ``ControlError`` `bad-request` for an app id that is not allowed.
    public init(app: String, socket: String? = nil, policy: AppPolicy = AppPolicy()) throws(ControlError) {
        try ControlRequest.checkApp(app)
        self.app = app
        self.policy = policy
        socketPath = socket ?? Self.defaultSocket()
    }

    /// The user's daemon socket if there is one, else the system service's.
    static func defaultSocket() -> String {
        if let path = ControlSocketPath.user(), access(path, F_OK) == 0 { return path }
        return ControlSocketPath.system
    }

    // MARK: - Running

    /// Connects, opens the app's session as the app itself, keeps its state with the manager's mode, and
    /// forwards the session's events until cancelled. When locationd cannot be reached or goes away
    /// (restarted), the source says so once (`LocationSourceStatus.unavailable` and a `source-unavailable`
    /// error) and connects again with a growing delay (0.25 s to 5 s), as the gpsd source does; the daemon
    /// held the app's fixes meanwhile.
    public func run(_ context: LocationSourceContext) async throws {
        context.report(.status(.connecting))
        var backoff = ReconnectBackoff()
        var reportedOutage = false
        while !Task.isCancelled {
            let failure: LocationError
            do throws(LocationError) {
                try await session(context) { reportedOutage = false; backoff.reset() }
                return
            } catch {
                failure = error
            }
            if Task.isCancelled { break }
            // Refused (another user's app, a bad policy): trying again changes nothing.
            if failure.code == .sourceFailed { throw failure }
            if !reportedOutage {
                reportedOutage = true
                context.report(.status(.unavailable))
                context.report(.error(LocationError(failure.code, failure.message + "; connecting again")))
            }
            try await context.clock.sleep(for: backoff.nextDelay())
        }
        throw CancellationError()
    }

    /// One connection, from `open` until it ends: returns when cancelled, throws when it failed or ended.
    private func session(_ context: LocationSourceContext, connected: () -> Void) async throws(LocationError) {
        let client: ControlClient
        do {
            client = try ControlClient(path: socketPath)
        } catch {
            throw LocationError(.sourceUnavailable, "cannot reach locationd for the app \(app): \(error.message)")
        }
        let link = Link(client: client, context: context)
        let startMode = context.mode
        var opening = Self.sessionPolicy(for: startMode, base: policy)
        opening.updates = true
        do {
            // Watching as the app hands over what the daemon held while the app was gone, right after the
            // reply; the state request is not waited for, so nothing waits behind a batch that takes a while
            // to read.
            _ = try link.call(.open(app: app, attach: true, policy: opening), timeout: Self.openTimeout)
            // Held batches as journal records, a fraction of the JSON to read; a daemon of an earlier version,
            // which does not know the key, is watched as before.
            do throws(ControlError) {
                _ = try link.call(.watch(batches: .records), timeout: Self.openTimeout)
            } catch where error.code == .badRequest {
                _ = try link.call(.watch, timeout: Self.openTimeout)
            }
            link.post(.state(set: Self.sessionState(for: startMode).rawValue))
        } catch {
            link.close()
            let code: LocationError.Code = error.code == .connectionClosed || error.code == .timeout ? .sourceUnavailable : .sourceFailed
            throw LocationError(code, "locationd did not take the app \(app): \(error.message)")
        }
        connected()
        let app = app, policy = policy
        // Every later mode change is made in the session, without waiting for the daemon's answer.
        let follower = Task {
            var mode = startMode
            while !Task.isCancelled {
                let next = await context.nextMode(after: mode)
                guard next != mode else { return }
                mode = next
                if case .dutyCycled = next {
                    link.post(.open(app: app, attach: true, policy: Self.sessionPolicy(for: next, base: policy)))
                }
                link.post(.state(set: Self.sessionState(for: next).rawValue))
            }
        }
        let ended = await withTaskCancellationHandler {
            await link.ended()
        } onCancel: {
            link.stop(app: app)
        }
        follower.cancel()
        if Task.isCancelled { return }
        throw ended ?? LocationError(.sourceUnavailable, "locationd ended the connection")
    }

    /// The session's state for a mode: the foreground for continuous acquisition, the background (with the
    /// background location mode on, so the daemon delivers rather than holds) for duty-cycled.
    static func sessionState(for mode: AcquisitionMode) -> ApplicationState {
        if case .dutyCycled = mode { return .background }
        return .active
    }

    /// `base` with what a mode sets: a duty cycle's interval and accuracy, and the background location mode.
    static func sessionPolicy(for mode: AcquisitionMode, base: AppPolicy) -> AppPolicy {
        var policy = base
        if case .dutyCycled(let cycle) = mode {
            let (seconds, attoseconds) = cycle.interval.components
            policy.reducedInterval = Double(seconds) + Double(attoseconds) * 1e-18
            policy.reducedAccuracy = cycle.desiredAccuracy ?? policy.reducedAccuracy
            policy.backgroundLocation = true
        }
        return policy
    }

    // MARK: - The connection

    /// One connection to the session: a thread reads its lines in order, answering the requests waiting
    /// for replies and handing events to the manager.
    private final class Link: Sendable {
        let client: ControlClient
        let context: LocationSourceContext

        private struct State {
            /// Requests sent and not yet answered, oldest first.
            var waiting: [Reply] = []
            var ended: LocationError?
            var isEnded = false
            var endWaiters: [CheckedContinuation<LocationError?, Never>] = []
            var stopping = false
        }

        /// One reply slot, filled by the reader thread.
        final class Reply: Sendable {
            let done = DispatchSemaphore(value: 0)
            let value = Mutex<Result<ControlResponse, ControlError>?>(nil)
        }

        private let state = Mutex(State())
        /// Serialises requests, so that replies come back in the order they were sent.
        private let sending = NSLock()

        init(client: ControlClient, context: LocationSourceContext) {
            self.client = client
            self.context = context
            Thread.detachNewThread { [self] in read() }
        }

        /// Sends a request and waits (blocking, bounded) for its reply.
        func call(_ request: ControlRequest, timeout: Duration) throws(ControlError) -> ControlResponse {
            let reply = Reply()
            sending.lock()
            let ended = state.withLock { state -> LocationError? in
                if state.isEnded { return state.ended ?? LocationError(.sourceUnavailable, "the connection ended") }
                state.waiting.append(reply)
                return nil
            }
            if let ended {
                sending.unlock()
                throw ControlError(.connectionClosed, ended.message)
            }
            do throws(ControlError) { try client.send(request) } catch {
                sending.unlock()
                throw error
            }
            sending.unlock()
            let milliseconds = Int(timeout.components.seconds * 1000)
            guard reply.done.wait(timeout: .now() + .milliseconds(milliseconds)) == .success, let result = reply.value.withLock({ $0 }) else {
                throw ControlError(.timeout, "locationd did not answer \(request.command) within \(timeout)")
            }
            return try result.get()
        }

        /// Sends a request without waiting for its reply (which the reader takes and drops).
        func post(_ request: ControlRequest) {
            let reply = Reply()
            sending.lock()
            defer { sending.unlock() }
            let open = state.withLock { state -> Bool in
                guard !state.isEnded else { return false }
                state.waiting.append(reply)
                return true
            }
            guard open else { return }
            do throws(ControlError) { try client.send(request) } catch {
                state.withLock { state in state.waiting.removeAll { $0 === reply } }
            }
        }

        /// Waits until the connection ends; `nil` when it was stopped.
        func ended() async -> LocationError? {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> Bool in
                    if state.isEnded { return true }
                    state.endWaiters.append(continuation)
                    return false
                }
                if now { continuation.resume(returning: state.withLock { $0.ended }) }
            }
        }

        /// Stops the session's updates and detaches from it (not a crash: nothing is held for the app).
        func stop(app: String) {
            let already = state.withLock { state in
                defer { state.stopping = true }
                return state.stopping
            }
            guard !already else { return }
            _ = try? call(.open(app: app, attach: false, policy: AppPolicy(updates: false)), timeout: .seconds(2))
            close()
        }

        func close() {
            state.withLock { $0.stopping = true }
            client.close()
        }

        private func read() {
            while true {
                let line: [UInt8]
                do throws(ControlError) { line = try client.readLine(timeout: nil, limit: ControlClient.maxEventLength) } catch {
                    finish(error)
                    return
                }
                if Self.isReply(line) {
                    let reply = state.withLock { $0.waiting.isEmpty ? nil : $0.waiting.removeFirst() }
                    reply?.value.withLock { $0 = Result { () throws(ControlError) in try ControlResponse(line: line) } }
                    reply?.done.signal()
                    continue
                }
                let frame: EventFrame?
                do throws(LocationError) { frame = try LocationEventDecoder.frameIfKnown(line) } catch {
                    // Said, not skipped in silence: a batch that does not read is not acknowledged, and comes
                    // again at the next connection.
                    context.report(.error(LocationError(.invalidData, "locationd sent a line this client cannot read: \(error.message)")))
                    continue
                }
                guard let frame else { continue }
                handle(frame)
            }
        }

        /// A reply line starts `{"ok":`; events start `{"type":`.
        private static func isReply(_ line: [UInt8]) -> Bool {
            line.starts(with: Array(#"{"ok":"#.utf8))
        }

        private func handle(_ frame: EventFrame) {
            switch frame.event {
            case .locations(let held, .held):
                // The daemon keeps the batch until told that the app's delegate has it.
                let id = frame.batchID
                context.report(
                    .held(
                        HeldLocations(held) { [weak self] in
                            if let id { self?.post(.acknowledge(batch: id)) }
                        }))
            case .locations(let locations, .live):
                for location in locations { context.deliver(location) }
            case .error(let error):
                context.report(.error(error))
            case .droppedHeldLocations(let count):
                // Dropped in the daemon's batch, before this app could have them.
                context.report(.error(JSONLineEncoder.droppedError(count)))
            case .sourceStatus(let status):
                context.report(.status(status))
            case .satellitesInView(let count):
                context.report(.satellitesInView(count))
            case .lifecycle, .accuracyPolicy, .applicationStopped, .region, .motion:
                // The app's own manager evaluates its own regions on the fixes it gets.
                // The app's own lifecycle is the truth; the session's follows it.
                break
            }
        }

        private func finish(_ error: ControlError) {
            let (waiting, waiters, ended) = state.withLock {
                state -> ([Reply], [CheckedContinuation<LocationError?, Never>], LocationError?) in
                state.isEnded = true
                if !state.stopping {
                    state.ended = LocationError(.sourceUnavailable, "locationd ended the connection: \(error.message)")
                }
                defer { (state.waiting, state.endWaiters) = ([], []) }
                return (state.waiting, state.endWaiters, state.ended)
            }
            for reply in waiting {
                reply.value.withLock { $0 = .failure(error) }
                reply.done.signal()
            }
            for waiter in waiters { waiter.resume(returning: ended) }
        }
    }
}
