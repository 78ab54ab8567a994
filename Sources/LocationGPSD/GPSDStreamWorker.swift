import Foundation
import LocationCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Reads gpsd on a dedicated thread: connect, WATCH, decode, merge epochs, reconnect, watchdog.
///
/// `gps_waiting` blocks, so the work runs on its own `Thread`, never on the Swift cooperative pool.
/// The libgps session is created, used and closed on that thread only. ``stop()`` may be called from
/// anywhere: it sets a flag and writes to a wake pipe that every wait polls together with the socket,
/// so the thread leaves at once, disables the WATCH and closes the connection, with no periodic wake-ups.
final class GPSDStreamWorker: Sendable {
    private enum PumpOutcome {
        case stopped
        case failed(LocationError)
    }

    private enum WaitResult {
        case readable
        case timedOut
        case stopRequested
        case failed(Int32)
    }

    private let configuration: GPSDConfiguration
    private let reconnects: Bool
    /// For one acquisition: stop reading as soon as a fix meets this accuracy (`.some(nil)`: any fix),
    /// on this thread, whatever the consumer of the events is doing.
    private let stopAtAccuracy: Double??
    private let state: GPSDSourceState
    private let stopRequested = Atomic<Bool>(false)
    private let wakeReader: Int32
    private let wakeWriter: Int32

    /// Creates a worker; with `reconnects` false the first failure ends it (for one-shot requests);
    /// with `stopAtAccuracy` set it ends after delivering the first fix that meets that accuracy.
    init(
        configuration: GPSDConfiguration, reconnects: Bool, state: GPSDSourceState,
        stopAtAccuracy: Double?? = nil
    ) throws(LocationError) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            throw LocationError(
                .sourceFailed, "cannot create the wake pipe for gpsd at \(configuration.endpoint): "
                    + String(cString: strerror(errno)))
        }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        self.configuration = configuration
        self.reconnects = reconnects
        self.stopAtAccuracy = stopAtAccuracy
        self.state = state
        self.wakeReader = fds[0]
        self.wakeWriter = fds[1]
    }

    deinit {
        close(wakeReader)
        close(wakeWriter)
    }

    /// Starts the thread. `sink` gets every event; `finish` is called once when the thread ends, with
    /// the failure that ended it (only without reconnection) or `nil`.
    func start(
        sink: @escaping @Sendable (LocationSourceEvent) -> Void,
        finish: @escaping @Sendable ((any Error)?) -> Void
    ) {
        let thread = Thread { [self] in
            Self.blockBrokenPipeSignal()
            finish(self.run(sink))
        }
        thread.name = "gpsd \(configuration.endpoint)"
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Keeps SIGPIPE from this thread: libgps writes its WATCH requests with a plain `write`, and one to a
    /// gpsd that has gone away would otherwise kill the whole host process, which a library must never do.
    /// The write fails with EPIPE instead, and the signal stays pending on this thread alone.
    static func blockBrokenPipeSignal() {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
    }

    /// Whether SIGPIPE is blocked on the calling thread.
    static var isBrokenPipeSignalBlocked: Bool {
        var current = sigset_t()
        pthread_sigmask(SIG_BLOCK, nil, &current)
        return sigismember(&current, SIGPIPE) == 1
    }

    /// Asks the thread to disable the WATCH, close the connection and end. Safe to call repeatedly.
    func stop() {
        guard !stopRequested.exchange(true, ordering: .sequentiallyConsistent) else { return }
        var byte: UInt8 = 1
        _ = write(wakeWriter, &byte, 1)
    }

    /// How many reads a due deadline waits for, when gpsd's lines are already there to read.
    static let lateReadLimit = 256

    /// The origin of the arrival times given to the merger: one monotonic clock for every connection.
    static let origin = ContinuousClock.now

    private var isStopping: Bool { stopRequested.load(ordering: .sequentiallyConsistent) }

    /// What one connection has shown so far, for its messages.
    private struct Connection {
        /// A well-formed gpsd message arrived, so the peer is gpsd.
        var sawMessage = false
        /// Receiver data arrived (the outage, if any, is over).
        var flowing = false
        /// How many receivers gpsd listed in its last DEVICES message.
        var deviceCount: Int?
        /// Lines skipped since the last well-formed message.
        var skippedSinceMessage = 0
    }

    /// Reports each kind of unusable line once per connection, and not again on reconnections that
    /// delivered no receiver data in between (a broken peer that is retried gets one message per kind).
    private struct ProblemLimiter {
        private var reported: Set<GPSDLineProblem.Kind> = []
        var previousConnectionFlowed = false

        mutating func newConnection() {
            if previousConnectionFlowed { reported.removeAll() }
            previousConnectionFlowed = false
        }

        mutating func shouldReport(_ kind: GPSDLineProblem.Kind) -> Bool {
            reported.insert(kind).inserted
        }
    }

    /// The thread's body; returns the error that ends a non-reconnecting worker.
    private func run(_ sink: @escaping @Sendable (LocationSourceEvent) -> Void) -> LocationError? {
        var merger = EpochMerger(
            fallbackSource: configuration.devicePath, settle: configuration.epochSettle, memory: state.merging,
            sourceName: configuration.devicePath ?? "the receiver at gpsd \(configuration.endpoint)")
        var backoff = ReconnectBackoff(
            initial: configuration.reconnectDelay, maximum: configuration.maximumReconnectDelay)
        var limiter = ProblemLimiter()
        let emit: (inout EpochMerger, [LocationSourceEvent]) -> Void = { merger, events in
            guard !events.isEmpty else { return }
            for event in events {
                sink(event)
                if case .location(let location) = event, let goal = self.stopAtAccuracy,
                    AcquisitionSelector.meets(location, goal)
                {
                    self.stop()
                }
            }
            self.state.merging = merger.memory
        }
        sink(.status(.connecting))
        while !isStopping {
            let failure: LocationError
            do throws(LocationError) {
                let session = try GPSDSession(host: configuration.host, port: configuration.port)
                try session.watch(devicePath: configuration.devicePath)
                limiter.newConnection()
                switch pump(session, &merger, &backoff, &limiter, sink, emit) {
                case .stopped:
                    // An epoch still being merged is dropped, not delivered half-complete.
                    session.unwatch()
                    return nil
                case .failed(let error):
                    failure = error
                }
            } catch {
                failure = error
            }
            emit(&merger, merger.reset())
            if !reconnects { return failure }
            if state.beginOutage() {
                sink(.status(.unavailable))
                // The message says that a failed connection is being retried; an unavailable gpsd's message
                // stays as it is, since a watch that never reached gpsd ends with it.
                let next = failure.code == .sourceFailed ? "; reconnecting" : ""
                sink(.error(LocationError(failure.code, failure.message + next)))
            }
            if case .stopRequested = wait(for: nil, timeout: backoff.nextDelay()) { break }
        }
        return nil
    }

    /// Reads one connection until it fails or the worker stops.
    private func pump(
        _ session: borrowing GPSDSession,
        _ merger: inout EpochMerger,
        _ backoff: inout ReconnectBackoff,
        _ limiter: inout ProblemLimiter,
        _ sink: @Sendable (LocationSourceEvent) -> Void,
        _ emit: (inout EpochMerger, [LocationSourceEvent]) -> Void
    ) -> PumpOutcome {
        let clock = ContinuousClock()
        let endpoint = configuration.endpoint
        var lastMessage = clock.now
        var mustPollSocket = false
        var connection = Connection()
        // Reads since a deadline came due, before it is applied (see below).
        var lateReads = 0
        while !isStopping {
            // Checked on every pass, not only when a wait times out: a peer that floods junk or one endless
            // line keeps the socket readable but sends no message.
            let now = clock.now
            let settleDue = merger.settleDeadline.map { now - Self.origin >= $0 } ?? false
            let silenceDue = now >= lastMessage + configuration.watchdogTimeout
            var readNow = false
            if settleDue || silenceDue {
                // This thread may have been held up (a busy machine, a sanitizer) while gpsd's lines waited
                // for it: what is already there was sent before the deadline, so it is read first, or an
                // epoch would be cut in two and a talking gpsd called silent. Up to a bound, because a peer
                // that floods junk keeps the socket readable for ever and must still meet the watchdog.
                if lateReads < Self.lateReadLimit {
                    if !mustPollSocket, session.hasBufferedLine {
                        readNow = true
                    } else {
                        switch wait(for: session.fileDescriptor, timeout: .zero) {
                        case .stopRequested: return .stopped
                        case .readable: readNow = true
                        case .timedOut, .failed: break
                        }
                    }
                }
                if readNow {
                    lateReads += 1
                } else {
                    lateReads = 0
                    if settleDue { emit(&merger, merger.flush()) }
                    if silenceDue { return .failed(silence(connection)) }
                }
            } else {
                lateReads = 0
            }
            if !readNow, mustPollSocket || !session.hasBufferedLine {
                var deadline = lastMessage + configuration.watchdogTimeout
                if let settled = merger.settleDeadline { deadline = min(deadline, Self.origin + settled) }
                switch wait(for: session.fileDescriptor, timeout: now.duration(to: deadline)) {
                case .stopRequested:
                    return .stopped
                case .failed(let code):
                    return .failed(LocationError(
                        .sourceFailed, "waiting for gpsd at \(endpoint) failed: " + String(cString: strerror(code))))
                case .timedOut:
                    continue
                case .readable:
                    break
                }
            }
            mustPollSocket = false
            switch session.read() {
            case .message(let report, let problem):
                state.messagesRead.add(1, ordering: .relaxed)
                lastMessage = clock.now
                connection.sawMessage = true
                connection.skippedSinceMessage = 0
                switch report {
                case .gpsdError(let message):
                    return .failed(LocationError(.sourceUnavailable, "gpsd at \(endpoint) refused to stream: \(message)"))
                case .devices(let count):
                    connection.deviceCount = count
                default:
                    break
                }
                if let problem, limiter.shouldReport(problem.kind) {
                    sink(.error(LocationError(.invalidData, problem.message(endpoint: endpoint))))
                }
                // Handshake messages alone do not end an outage: only receiver data does.
                if !connection.flowing, report.isReceiverData {
                    connection.flowing = true
                    limiter.previousConnectionFlowed = true
                    backoff.reset()
                    state.endOutage()
                }
                emit(&merger, merger.accept(report, at: lastMessage - Self.origin))
            case .skipped(let problem):
                if problem.isNotGPSD, !connection.sawMessage {
                    // Something else listens there: as good as no gpsd at all.
                    return .failed(LocationError(
                        .sourceUnavailable,
                        "the peer at \(endpoint) is not speaking gpsd's JSON protocol; it sent \(problem.quotedLine)"))
                }
                state.linesSkipped.add(1, ordering: .relaxed)
                connection.skippedSinceMessage += 1
                if limiter.shouldReport(problem.kind) {
                    sink(.error(LocationError(.invalidData, problem.message(endpoint: endpoint))))
                }
            case .partial:
                mustPollSocket = true
            case .failed(let error):
                emit(&merger, merger.flush())
                return .failed(error)
            }
        }
        return .stopped
    }

    /// The watchdog's error: what the connection sent before it fell silent. A gpsd without any receiver
    /// is unavailable rather than failed: there is nothing to reconnect to until one is attached.
    private func silence(_ connection: Connection) -> LocationError {
        let endpoint = configuration.endpoint
        let seconds = configuration.watchdogTimeout.seconds.plainText
        let message: String
        if connection.skippedSinceMessage > 0 {
            message = "gpsd at \(endpoint) sent only unusable lines (\(connection.skippedSinceMessage)) for \(seconds) s"
        } else if connection.flowing {
            message = "gpsd at \(endpoint) sent nothing for \(seconds) s (stalled gpsd or receiver)"
        } else if connection.deviceCount == 0 {
            return LocationError(.sourceUnavailable, "gpsd at \(endpoint) has no receiver (its device list is empty)")
        } else if !connection.sawMessage {
            message = "gpsd at \(endpoint) accepted the connection but sent nothing for \(seconds) s (gpsd stalled, or not gpsd)"
        } else {
            message = "gpsd at \(endpoint) sent no data from a receiver for \(seconds) s"
        }
        return LocationError(.sourceFailed, message)
    }

    /// Waits until `socket` is readable, the timeout passes, or ``stop()`` is called.
    private func wait(for socket: Int32?, timeout: Duration) -> WaitResult {
        var fds = [pollfd(fd: wakeReader, events: Int16(POLLIN), revents: 0)]
        if let socket { fds.append(pollfd(fd: socket, events: Int16(POLLIN), revents: 0)) }
        let milliseconds = Int32(clamping: Int64(max(0, (timeout.seconds * 1000).rounded(.up))))
        while true {
            if isStopping { return .stopRequested }
            let ready = poll(&fds, nfds_t(fds.count), milliseconds)
            if ready < 0 {
                if errno == EINTR { continue }
                return .failed(errno)
            }
            if ready == 0 { return .timedOut }
            if fds[0].revents != 0 || isStopping { return .stopRequested }
            return .readable
        }
    }
}
