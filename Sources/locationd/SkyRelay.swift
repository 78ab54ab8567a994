import Foundation
import LocationCore
import LocationGPSD

/// The satellites of the daemon's receiver, for `sky` requests (`locationctl sky` through locationd).
///
/// A watch of gpsd's SKY reports (``GPSDSkyWatch``, on a connection of its own, to the daemon's gpsd and
/// device) runs only while someone asks: the first request starts it, and it stops when no request has
/// come for ``idleTimeout``. Each view gets the next sequence number; a request waits up to its bound for
/// a view newer than the one it last had, so a client asking in a loop sees every view once.
final class SkyRelay: Sendable {
    /// How long the watch outlives the last request.
    static let idleTimeout: Duration = .seconds(10)

    private struct State {
        var view: SkyView?
        var sequence = 0
        /// Why there is no new view: gpsd cannot be reached, or went away (the watch reconnects).
        var problem: String?
        /// The watch failed for good (gpsd unreachable at its start); the next request starts another.
        var failed = false
        var lastAsked = ContinuousClock.now
        var watch: Task<Void, Never>?
    }

    private let configuration: GPSDConfiguration
    private let state = Locked(State())

    /// A relay of the gpsd at `configuration`'s address (its device only, when it names one).
    init(configuration: GPSDConfiguration) {
        self.configuration = configuration
    }

    /// What a request gets.
    struct Answer: Sendable {
        /// The newest view, when it is newer than the request's `after`.
        var view: SkyView?
        /// The newest view's number.
        var sequence: Int
        /// Why no view is coming now (gpsd went away; the watch reconnects).
        var problem: String?
    }

    /// The newest view after `after`, waiting up to `wait` for one. Throws `.sourceUnavailable` when gpsd
    /// cannot be reached at all.
    func view(after: Int, wait: Duration) async throws(LocationError) -> Answer {
        startIfNeeded()
        let deadline = ContinuousClock.now + wait
        while true {
            let current = state.withLock { state in
                state.lastAsked = .now
                return state
            }
            if let view = current.view, current.sequence > after {
                return Answer(view: view, sequence: current.sequence, problem: nil)
            }
            if current.failed { throw LocationError(.sourceUnavailable, current.problem ?? "gpsd at \(configuration.endpoint) cannot be reached") }
            guard ContinuousClock.now < deadline, !Task.isCancelled else {
                return Answer(view: nil, sequence: current.sequence, problem: current.problem)
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Stops the watch (the daemon is stopping).
    func stop() {
        state.withLock { $0.watch }?.cancel()
    }

    private func startIfNeeded() {
        state.withLock { state in
            guard state.watch == nil else { return }
            state.problem = nil
            state.failed = false
            state.lastAsked = .now
            let configuration = configuration
            state.watch = Task { [weak self] in
                await self?.run(GPSDSkyWatch(configuration: configuration))
            }
        }
    }

    /// Reads views until no one has asked for ``idleTimeout``, the watch fails for good, or the daemon stops.
    private func run(_ watch: GPSDSkyWatch) async {
        let views = watch.views { [weak self] error in
            self?.state.withLock { $0.problem = error.message }
        }
        let ended = Locked(false)
        let reader = Task { [weak self] in
            do {
                for try await view in views {
                    self?.state.withLock { state in
                        state.view = view
                        state.sequence += 1
                        state.problem = nil
                    }
                }
            } catch {
                let message = (error as? LocationError)?.message ?? "\(error)"
                self?.state.withLock { state in
                    state.problem = message
                    state.failed = true
                }
            }
            ended.withLock { $0 = true }
        }
        while !Task.isCancelled, !ended.value {
            try? await Task.sleep(for: .milliseconds(250))
            if state.withLock({ ContinuousClock.now - $0.lastAsked > Self.idleTimeout }) { break }
        }
        reader.cancel()
        _ = await reader.value
        state.withLock { state in
            state.watch = nil
            // A view of a watch that has stopped is not news: the next watch starts from none, its views
            // numbered on from this one's.
            state.view = nil
        }
    }
}
