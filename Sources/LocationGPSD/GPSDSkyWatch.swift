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
    /// The stream fails with `LocationError.Code.sourceUnavailable` when gpsd cannot be reached, and with
    /// `LocationError.Code.sourceFailed` when it goes away, refuses the watch, or sends nothing for
    /// ``GPSDConfiguration/watchdogTimeout`` (a receiver that sends fixes sends SKY reports too). It does not
    /// reconnect: a sky view is for a person watching, who sees the error.
    public func views() -> AsyncThrowingStream<SkyView, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: SkyView.self, throwing: (any Error).self, bufferingPolicy: .bufferingNewest(64))
        let stopped = Arc(Atomic<Bool>(false))
        continuation.onTermination = { _ in stopped.value.store(true, ordering: .relaxed) }
        let configuration = configuration
        let thread = Thread {
            Self.run(configuration, continuation: continuation, stopped: stopped)
        }
        thread.name = "gpsd sky watch"
        thread.start()
        return stream
    }

    /// A shared flag the thread polls between reads.
    private final class Arc<Value: ~Copyable>: Sendable where Value: Sendable {
        let value: Value
        init(_ value: consuming Value) { self.value = value }
    }

    private static func run(
        _ configuration: GPSDConfiguration, continuation: AsyncThrowingStream<SkyView, any Error>.Continuation,
        stopped: Arc<Atomic<Bool>>
    ) {
        do throws(LocationError) {
            let session = try GPSDSession(host: configuration.host, port: configuration.port, readsSatellites: true)
            try session.watch(devicePath: configuration.devicePath)
            read(session, configuration, continuation: continuation, stopped: stopped)
        } catch {
            continuation.finish(throwing: error)
        }
    }

    private static func read(
        _ session: borrowing GPSDSession, _ configuration: GPSDConfiguration,
        continuation: AsyncThrowingStream<SkyView, any Error>.Continuation, stopped: Arc<Atomic<Bool>>
    ) {
        let endpoint = configuration.endpoint
        let watchdog = configuration.watchdogTimeout
        var lastMessage = ContinuousClock.now
        while !stopped.value.load(ordering: .relaxed) {
            if !session.hasBufferedLine {
                var descriptor = pollfd(fd: session.fileDescriptor, events: Int16(POLLIN), revents: 0)
                guard poll(&descriptor, 1, 200) > 0 else {
                    if ContinuousClock.now - lastMessage > watchdog {
                        continuation.finish(throwing: LocationError(
                            .sourceFailed, "gpsd at \(endpoint) sent nothing for \(watchdog.seconds) s"))
                        return
                    }
                    continue
                }
            }
            switch session.read() {
            case .message(let report, _):
                lastMessage = ContinuousClock.now
                switch report {
                case .sky(_, _, _, _, _, let view?):
                    continuation.yield(view)
                case .gpsdError(let message):
                    continuation.finish(throwing: LocationError(.sourceFailed, "gpsd at \(endpoint): \(message)"))
                    return
                default:
                    break
                }
            case .skipped:
                lastMessage = ContinuousClock.now
            case .partial:
                continue
            case .failed(let error):
                continuation.finish(throwing: error)
                return
            }
        }
        session.unwatch()
        continuation.finish()
    }
}
