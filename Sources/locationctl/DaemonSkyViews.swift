import Foundation
import LocationControl
import LocationCore

#if canImport(Glibc)
    import Glibc
#endif

/// The satellites of locationd's receiver, asked for in a loop on one connection (`sky` requests): each view
/// once, as the daemon's gpsd reports it.
enum DaemonSkyViews {
    /// The reply to a `sky` request.
    private struct Reply: Decodable {
        var sequence: Int
        var sky: SkyViewJSON.Wire?
        var problem: String?
    }

    /// The views of the daemon at `socket`. The stream fails with the daemon's error (its receiver is not
    /// gpsd, or gpsd cannot be reached) or when the daemon cannot be reached at the start; when the daemon
    /// or its gpsd goes away later, `outage` is told once and the views continue when they are back.
    static func views(socket: String, outage: @escaping @Sendable (String) -> Void) -> AsyncThrowingStream<SkyView, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: SkyView.self, throwing: (any Error).self, bufferingPolicy: .bufferingNewest(64))
        let stopped = Locked(false)
        continuation.onTermination = { _ in stopped.withLock { $0 = true } }
        let thread = Thread {
            var backoff = ReconnectBackoff(initial: .milliseconds(250), maximum: .seconds(5))
            var after = 0
            var connectedOnce = false
            var lastProblem: String?
            while !stopped.value {
                do throws(ControlError) {
                    let client = try ControlClient(path: socket)
                    connectedOnce = true
                    while !stopped.value {
                        let response = try client.request(.sky(after: after))
                        backoff.reset()
                        guard let reply = try? JSONDecoder().decode(Reply.self, from: Data(response.line)) else {
                            continuation.finish(throwing: ControlError(.protocolError, "locationd's sky reply is not one this client reads: \(response.text.prefix(200))"))
                            return
                        }
                        // A restarted daemon numbers its views from 0 again.
                        after = reply.sequence
                        if let problem = reply.problem, problem != lastProblem { outage(problem) }
                        lastProblem = reply.problem
                        if let view = reply.sky?.view { continuation.yield(view) }
                    }
                } catch {
                    // The daemon's own answer (no satellites, no gpsd), or no daemon to start with: final.
                    let lost = [ControlError.Code.connectionClosed, .notListening, .io, .timeout, .shuttingDown].contains(error.code)
                    guard connectedOnce, lost else {
                        continuation.finish(throwing: error)
                        return
                    }
                    let reason = "locationd at \(socket) went away (\(error.message))"
                    if lastProblem != reason { outage(reason) }
                    lastProblem = reason
                    after = 0
                }
                let deadline = ContinuousClock.now + backoff.nextDelay()
                while !stopped.value, ContinuousClock.now < deadline { usleep(20_000) }
            }
            continuation.finish()
        }
        thread.name = "locationd sky"
        thread.start()
        return stream
    }
}
