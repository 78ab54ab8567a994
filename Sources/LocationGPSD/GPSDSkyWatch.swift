import Foundation
import LocationCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The satellites gpsd's receiver sees, as gpsd reports them in its SKY messages: for a sky view (`locationctl
/// sky`), apart from the location stream, on a connection of its own.
///
/// ```swift
/// let watch = GPSDSkyWatch(configuration: GPSDConfiguration(host: "localhost", port: 2947))
/// for try await view in watch.views() {
///     print(view.usedCount, "of", view.satellites.count, "satellites used")
/// }
/// ```
public struct GPSDSkyWatch: Sendable {
    /// Where gpsd is, and which receiver to watch.
    public let configuration: GPSDConfiguration

    /// A watch of gpsd at `configuration`'s host and port (of its device only, when it names one).
    public init(configuration: GPSDConfiguration) {
        self.configuration = configuration
    }

    /// Each SKY report that lists satellites, as gpsd sends it, until the consumer stops iterating.
    ///
    /// The stream fails with `LocationError.Code.sourceUnavailable` when gpsd cannot be reached at the
    /// start, and with `LocationError.Code.sourceFailed` when gpsd refuses the watch. When gpsd goes away
    /// later, or sends nothing for ``GPSDConfiguration/watchdogTimeout``, the watch reconnects as the location
    /// source does (from ``GPSDConfiguration/reconnectDelay``, doubling up to
    /// ``GPSDConfiguration/maximumReconnectDelay``): `outage` is called once with the reason, and the views
    /// continue when gpsd is back. A receiver that reports no satellites (NMEA without GSV) makes gpsd send
    /// no SKY at all while its fixes keep the connection alive: the stream then waits.
    public func views(outage: @escaping @Sendable (LocationError) -> Void = { _ in }) -> AsyncThrowingStream<SkyView, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: SkyView.self, throwing: (any Error).self, bufferingPolicy: .bufferingNewest(64))
        let stopped = Stopped()
        continuation.onTermination = { _ in stopped.flag.store(true, ordering: .relaxed) }
        let configuration = configuration
        let thread = Thread {
            Self.run(configuration, continuation: continuation, stopped: stopped, outage: outage)
        }
        thread.name = "gpsd sky watch"
        thread.start()
        return stream
    }

    /// A flag the thread polls between reads, set when the consumer stops iterating.
    private final class Stopped: Sendable {
        let flag = Atomic<Bool>(false)
        var isSet: Bool { flag.load(ordering: .relaxed) }
    }

    private static func run(
        _ configuration: GPSDConfiguration, continuation: AsyncThrowingStream<SkyView, any Error>.Continuation,
        stopped: Stopped, outage: @Sendable (LocationError) -> Void
    ) {
        var backoff = ReconnectBackoff(initial: configuration.reconnectDelay, maximum: configuration.maximumReconnectDelay)
        var connectedOnce = false
        var inOutage = false
        while !stopped.isSet {
            do throws(LocationError) {
                let session = try GPSDSession(host: configuration.host, port: configuration.port, readsSatellites: true)
                try session.watch(devicePath: configuration.devicePath)
                connectedOnce = true
                switch read(session, configuration, continuation: continuation, stopped: stopped, backoff: &backoff, inOutage: &inOutage) {
                case .stopped:
                    continuation.finish()
                    return
                case .refused(let error):
                    continuation.finish(throwing: error)
                    return
                case .lost(let error):
                    if !inOutage { outage(error) }
                    inOutage = true
                }
            } catch {
                // Unreachable at the start, or a watch gpsd refuses: nothing to wait for.
                guard connectedOnce, error.code == .sourceUnavailable else {
                    continuation.finish(throwing: error)
                    return
                }
                if !inOutage { outage(error) }
                inOutage = true
            }
            let deadline = ContinuousClock.now + backoff.nextDelay()
            while !stopped.isSet, ContinuousClock.now < deadline { usleep(20_000) }
        }
        continuation.finish()
    }

    /// How reading ended.
    private enum End {
        /// The consumer stopped iterating.
        case stopped
        /// gpsd went away or fell silent: worth reconnecting.
        case lost(LocationError)
        /// gpsd answered with an error (an unknown device): reconnecting would not change it.
        case refused(LocationError)
    }

    /// Reads views until the consumer stops, or gpsd goes away, falls silent or refuses.
    private static func read(
        _ session: borrowing GPSDSession, _ configuration: GPSDConfiguration,
        continuation: AsyncThrowingStream<SkyView, any Error>.Continuation, stopped: Stopped, backoff: inout ReconnectBackoff,
        inOutage: inout Bool
    ) -> End {
        var sawMessage = false
        let endpoint = configuration.endpoint
        let watchdog = configuration.watchdogTimeout
        var lastMessage = ContinuousClock.now
        while !stopped.isSet {
            if !session.hasBufferedLine {
                var descriptor = pollfd(fd: session.fileDescriptor, events: Int16(POLLIN), revents: 0)
                guard poll(&descriptor, 1, 200) > 0 else {
                    if ContinuousClock.now - lastMessage > watchdog {
                        return .lost(LocationError(.sourceFailed, "gpsd at \(endpoint) sent nothing for \(watchdog.seconds) s"))
                    }
                    continue
                }
            }
            switch session.read() {
            case .message(let report, _):
                lastMessage = ContinuousClock.now
                backoff.reset()
                // gpsd is back: its next outage is told too.
                inOutage = false
                sawMessage = true
                switch report {
                case .sky(_, _, _, _, _, let view?):
                    continuation.yield(view)
                case .gpsdError(let message):
                    return .refused(LocationError(.sourceFailed, "gpsd at \(endpoint): \(message)"))
                default:
                    break
                }
            case .skipped(let problem):
                // Something else listens there (a web server, ssh): as good as no gpsd at all, as for watch.
                if problem.isNotGPSD, !sawMessage {
                    return .refused(LocationError(
                        .sourceUnavailable, "the peer at \(endpoint) is not speaking gpsd's JSON protocol; it sent \(problem.quotedLine)"))
                }
                lastMessage = ContinuousClock.now
            case .partial:
                continue
            case .failed(let error):
                return .lost(error)
            }
        }
        session.unwatch()
        return .stopped
    }
}
