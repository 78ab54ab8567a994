import Foundation
#if canImport(Glibc)
import Glibc
#endif
import LocationControl
import LocationCore
import LocationService
import UnixSignals

/// The `locationctl` side of locationd's control socket, with failures mapped to exit codes.
enum DaemonClient {
    /// Turns a control error into the command's failure: unreachable daemon 69, no fix 75, refused state 64,
    /// another user's socket 77.
    static func failure(_ error: ControlError, socket: String) -> CommandFailure {
        switch error.code {
        case ControlError.Code(LocationError.Code.noFix): .noFix(error.message)
        // The daemon answered: its source (gpsd, a replay file) is down, and the message says why.
        case ControlError.Code(LocationError.Code.sourceUnavailable), ControlError.Code(LocationError.Code.sourceFailed):
            .unavailable("locationd at \(socket): \(error.message)")
        case ControlError.Code(LocationError.Code.invalidTransition), .badRequest, .unknownCommand: .usage(error.message)
        case .untrustedPeer: .noPermission(error.message)
        // Another user's app (only root may name one), or a daemon that cannot tell users apart.
        case "not-owner", "unmapped-user": .noPermission("locationd at \(socket): \(error.message)")
        case "app-in-use": .unavailable("locationd at \(socket): \(error.message)")
        // What was named is not there (66, as a missing input file): locationd itself answered.
        case "no-such-app", "no-such-region": .missingInput("locationd at \(socket): \(error.message)")
        case ControlError.Code(LocationError.Code.journalIO): .cannotCreate("locationd at \(socket): \(error.message)")
        case .permissionDenied: .noPermission("\(error.message); \(permissionAdvice(socket))")
        case .tooManyConnections, .shuttingDown, "too-many-apps", "too-many-regions":
            .unavailable("locationd at \(socket) is busy: \(error.message)")
        case .notListening, .pathTooLong, .connectionClosed, .timeout, .io:
            .unavailable("locationd at \(socket): \(error.message)")
        default: .badData("locationd at \(socket): \(error.message)")
        }
    }

    /// What to do about a socket this user may not connect to: join its group when it has one (mode 0660),
    /// else run as the daemon's user.
    static func permissionAdvice(_ socket: String) -> String {
        // A group's socket sits in a directory the group may enter (0750), which is as far as an outsider sees.
        let directory = FilePathText.parent(of: socket)
        var info = stat()
        let socketSeen = stat(socket, &info) == 0
        let hidden = !socketSeen && errno == EACCES
        let shared = (socketSeen && info.st_mode & 0o060 == 0o060)
            || (stat(directory, &info) == 0 && info.st_mode & 0o050 == 0o050 && info.st_mode & 0o005 == 0)
        if shared, let name = getgrgid(info.st_gid).flatMap({ $0.pointee.gr_name.map { String(cString: $0) } }) {
            return "only locationd's user and the group \(name) may use it: "
                + "join the group (sudo usermod -aG \(name) $USER, then log in again)"
        }
        // The socket cannot even be seen: its directory keeps everyone else out, whatever the socket's mode (a
        // directory left from an owner-only run keeps a group's members out too).
        if hidden, stat(directory, &info) == 0 {
            return "its directory \(directory) (mode \(String(info.st_mode & 0o777, radix: 8))) keeps other users out: run as the user "
                + "locationd runs as, or, for a daemon shared with a group, let the group in (chgrp GROUP \(directory); chmod 750 \(directory))"
        }
        return "the socket is owner-only: run as the user locationd runs as"
    }


    /// Whether a failure to reach `socket` lets the client try the next candidate: nothing listens there, or
    /// this user may not connect. Anything else (a daemon that answered, an impostor) ends the search.
    private static func triesNext(_ error: ControlError) -> Bool {
        [ControlError.Code.notListening, .permissionDenied, .pathTooLong].contains(error.code)
    }

    /// Sends one request and returns the reply, on a thread of its own (the client blocks).
    static func request(
        _ request: ControlRequest, socket: String, app: String? = nil, policy: AppPolicy? = nil
    ) async throws -> ControlResponse {
        switch await send(request, socket: socket, app: app, policy: policy) {
        case .success(let response): return response
        case .failure(let error): throw failure(error, socket: socket)
        }
    }

    /// Sends one request to the first of `sockets` that answers and returns the reply and that socket.
    /// When none answers, the failure names every socket tried and why (the last one's exit code).
    static func request(
        _ request: ControlRequest, sockets: ControlSocketChoice, app: String? = nil, policy: AppPolicy? = nil
    ) async throws -> (ControlResponse, socket: String) {
        var reasons: [(socket: String, error: ControlError)] = []
        for socket in sockets.candidates {
            switch await send(request, socket: socket, app: app, policy: policy) {
            case .success(let response): return (response, socket)
            case .failure(let error):
                guard !sockets.isExplicit, triesNext(error) else { throw failure(error, socket: socket) }
                reasons.append((socket, error))
            }
        }
        throw combinedFailure(reasons)
    }

    /// One failure for several sockets tried: the last one's code, every reason in the message.
    private static func combinedFailure(_ reasons: [(socket: String, error: ControlError)]) -> CommandFailure {
        guard let last = reasons.last else { return .unavailable("no control socket to try") }
        guard reasons.count > 1 else { return failure(last.error, socket: last.socket) }
        // A socket this user may not use says more than a missing one: its code (77) wins.
        let worst = reasons.first { $0.error.code == .permissionDenied } ?? last
        let code = failure(worst.error, socket: worst.socket).exitCode
        let tried = reasons.map { reason in
            reason.error.code == .permissionDenied ? "\(reason.error.message); \(permissionAdvice(reason.socket))" : reason.error.message
        }
        return CommandFailure(exitCode: code, message: "locationd cannot be reached: " + tried.joined(separator: "; "))
    }

    /// Sends one request on a thread of its own, about `app` when one is named (an `open` first, on the
    /// same connection), and returns the reply or the error as it is.
    private static func send(
        _ request: ControlRequest, socket: String, app: String?, policy: AppPolicy? = nil
    ) async -> Result<ControlResponse, ControlError> {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(returning: Result { () throws(ControlError) in
                    let client = try ControlClient(path: socket)
                    if app != nil || policy != nil {
                        // Only `state` (which passes a policy, maybe empty) creates an app; reading never does.
                        _ = try client.request(.open(app: app ?? ControlRequest.defaultApp, create: policy != nil, policy: policy ?? AppPolicy()))
                    }
                    return try client.request(request)
                })
            }
        }
    }

    /// One position from the first of `sockets` that answers; `nil` when none can be reached or used by this
    /// user and the socket was not named with `--socket`.
    static func current(
        sockets: ControlSocketChoice, timeout: Double, accuracy: Double?, maxAge: Double? = nil, app: String? = nil
    ) async throws -> Location? {
        for socket in sockets.candidates {
            if let location = try await current(
                socket: socket, timeout: timeout, accuracy: accuracy, maxAge: maxAge, required: sockets.isExplicit || app != nil, app: app)
            {
                return location
            }
        }
        return nil
    }

    /// One position from the daemon; `nil` when the daemon cannot be reached or used by this user and the socket
    /// was not asked for explicitly.
    static func current(
        socket: String, timeout: Double, accuracy: Double?, maxAge: Double? = nil, required: Bool, app: String? = nil
    ) async throws -> Location? {
        switch await send(.current(timeout: .seconds(timeout), accuracy: accuracy, maxAge: maxAge.map { .seconds($0) }), socket: socket, app: app) {
        case .success(let response):
            do throws(ControlError) { return try response.decode(Location.self, forKey: "location") } catch {
                throw CommandFailure.badData("locationd at \(socket): \(error.message)")
            }
        case .failure(let error):
            let failure = failure(error, socket: socket)
            // A daemon that answered that its source is down has the answer (69 and its reason); only a
            // daemon that cannot be reached or used is passed over for gpsd when no socket was named.
            let daemonAnswered = [ControlError.Code(LocationError.Code.sourceUnavailable), ControlError.Code(LocationError.Code.sourceFailed)].contains(error.code)
            if (failure.exitCode == 69 || failure.exitCode == 77), !required, !daemonAnswered { return nil }
            throw failure
        }
    }

    /// Streams the daemon's events into `writer` until the limits, a signal or the duration end it.
    ///
    /// When the daemon goes away after the watch began (restarted, upgraded, killed), the watch says so in
    /// the stream (a `source-unavailable` error) and connects again, at 0.25 s doubling to 5 s, for as long
    /// as it runs; what the daemon held meanwhile comes on the new connection. A refusal (another user's
    /// socket, an app that is gone) ends it.
    static func watch(
        socket: String, writer: EventWriter, limits: WatchLimits, interrupts: UnixSignalsSequence, duration: Duration?,
        app: String? = nil, policy: AppPolicy? = nil
    ) async throws -> CommandFailure? {
        let first: (ControlClient, AsyncThrowingStream<[UInt8], any Error>)
        do {
            first = try connectAndWatch(socket: socket, app: app, policy: policy)
        } catch {
            throw failure(error, socket: socket)
        }
        let current = Locked<ControlClient?>(first.0)
        let problem = Locked<CommandFailure?>(nil)
        // Acknowledgements sent on the current connection and not yet answered.
        let unanswered = Locked(0)
        let reader = Task {
            var lines = first.1
            var backoff = ReconnectBackoff()
            while !Task.isCancelled {
                let ended = await read(
                    lines, from: socket, client: current, writer: writer, limits: limits, problem: problem, unanswered: unanswered)
                unanswered.withLock { $0 = 0 }
                guard ended, problem.value == nil, !Task.isCancelled else { break }
                limits.handle(EventFrame(.error(LocationError(.sourceUnavailable, "locationd at \(socket) went away; connecting again")))) { writer.write($0) }
                // Connects again until it works, a refusal ends the watch, or the watch ends.
                var reconnected = false
                while !reconnected, !Task.isCancelled {
                    try? await Task.sleep(for: backoff.nextDelay())
                    do throws(ControlError) {
                        let next = try connectAndWatch(socket: socket, app: app, policy: policy)
                        current.withLock { $0 = next.0 }
                        lines = next.1
                        reconnected = true
                        backoff.reset()
                    } catch {
                        let passing: [ControlError.Code] = [.notListening, .connectionClosed, .io, .timeout, .shuttingDown, .tooManyConnections]
                        if passing.contains(error.code) { continue }
                        problem.withLock { $0 = failure(error, socket: socket) }
                        break
                    }
                }
                guard reconnected else { break }
            }
            limits.finish(.done)
        }
        let outcome = await limits.wait(interrupts: interrupts, duration: duration)
        // A batch that reached the count was acknowledged just before: the connection stays open until
        // locationd answers (at most 2 s), as a close can overtake the acknowledgement and the daemon would
        // send the batch again to the next watcher.
        if outcome == .done {
            let deadline = ContinuousClock.now + .seconds(2)
            while unanswered.value > 0, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(5)) }
        }
        reader.cancel()
        current.value?.close()
        if outcome == .done, limits.reachedCount { return nil }
        if case .interrupted(let signal) = outcome { return .interrupted(by: signal) }
        return outcome == .done ? problem.value : nil
    }

    /// Connects, opens the app when one is named, and watches.
    private static func connectAndWatch(
        socket: String, app: String?, policy: AppPolicy?
    ) throws(ControlError) -> (ControlClient, AsyncThrowingStream<[UInt8], any Error>) {
        let client = try ControlClient(path: socket)
        if app != nil || policy != nil {
            _ = try client.request(.open(app: app ?? ControlRequest.defaultApp, create: false, policy: policy ?? AppPolicy()))
        }
        return (client, try client.watch())
    }

    /// Writes one connection's events until its stream ends. Returns `true` when the daemon closed it (or
    /// the connection broke), `false` when the watch must end (bad data, set in `problem`).
    private static func read(
        _ lines: AsyncThrowingStream<[UInt8], any Error>, from socket: String, client: Locked<ControlClient?>,
        writer: EventWriter, limits: WatchLimits, problem: Locked<CommandFailure?>, unanswered: Locked<Int>
    ) async -> Bool {
        do {
            for try await line in lines {
                // The replies to this watch's acknowledgements.
                if line.starts(with: Array(#"{"ok":"#.utf8)) {
                    unanswered.withLock { $0 = max(0, $0 - 1) }
                    continue
                }
                do throws(LocationError) {
                    // An event type a newer daemon sends is skipped, not an end to watching.
                    guard let frame = try LocationEventDecoder.frameIfKnown(line) else { continue }
                    // The watched app was removed: nothing more will come for it, and the watch ends.
                    if case .error(let error) = frame.event, error.code.rawValue == "app-removed" {
                        limits.handle(frame) { writer.write($0) }
                        problem.withLock { $0 = .missingInput("locationd at \(socket): \(error.message)") }
                        return false
                    }
                    // Acknowledged from within the write, which comes before the watch may end (on the
                    // --count that the batch reaches): the ack is sent before the connection closes.
                    limits.handle(frame) { event, whole in
                        // Written as it came, unless the count cut it.
                        writer.write(event, line: whole ? line : nil)
                        // Written whole: the daemon may let go of the batch.
                        if whole, case .locations(_, .held) = event, let id = frame.batchID, writer.failure == nil {
                            unanswered.withLock { $0 += 1 }
                            try? client.value?.send(.acknowledge(batch: id))
                        }
                    }
                } catch {
                    problem.withLock { $0 = .badData("locationd at \(socket) sent \(error.message)") }
                    return false
                }
            }
            return true
        } catch let error as ControlError where error.code == .permissionDenied || error.code == .untrustedPeer {
            problem.withLock { $0 = failure(error, socket: socket) }
            return false
        } catch {
            // The connection broke (the daemon was killed): as a closed stream.
            return true
        }
    }
}
