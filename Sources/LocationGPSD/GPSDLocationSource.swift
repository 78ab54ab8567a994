import LocationCore
import Synchronization

/// The live location source: fixes from gpsd, read through libgps.
///
/// It connects to gpsd at ``GPSDConfiguration/host``:``GPSDConfiguration/port``, enables a JSON WATCH
/// (of one device when ``GPSDConfiguration/devicePath`` is set) and turns the TPV and SKY reports into
/// one ``Location`` per receiver epoch:
///
/// - Only real fixes (mode 2D or 3D, with a time and a coordinate) are delivered; a fix whose time is
///   not later than the last delivered one is never delivered again.
/// - Values gpsd did not send are `nil`. `altitude` is `altMSL`, `ellipsoidalAltitude` is `altHAE`,
///   `horizontalAccuracy` is `eph` (or the root sum of squares of `epx` and `epy` when gpsd sends no
///   `eph`), `verticalAccuracy` is `epv`, `speedAccuracy` is `eps`, `course` is `track`,
///   `courseAccuracy` is `epd`, `satellitesUsed` comes from the latest SKY, `source` is the device path
///   and `timestamp` the fix time.
/// - Fix loss reports `.status(.noFix)` and a ``LocationError/Code/fixLost`` error; the next fix
///   reports `.status(.hasFix)`.
/// - When gpsd cannot be reached, closes the connection, or sends nothing for
///   ``GPSDConfiguration/watchdogTimeout``, the source reports `.status(.unavailable)` and one error per
///   outage (``LocationError/Code/sourceUnavailable`` or ``LocationError/Code/sourceFailed``) and
///   reconnects with capped exponential backoff; when data flows again the next report announces
///   `.status(.hasFix)` or `.status(.noFix)`.
///
/// In duty-cycled mode each acquisition opens its own connection, and between acquisitions there is
/// no connection at all, so gpsd may idle the receiver and this process sleeps.
public struct GPSDLocationSource: ListeningLocationSource {
    /// Where gpsd is and how it is treated.
    public let configuration: GPSDConfiguration
    private let state = GPSDSourceState()

    /// Creates a source; throws `.invalidConfiguration` for a bad configuration.
    public init(configuration: GPSDConfiguration = GPSDConfiguration()) throws(LocationError) {
        try configuration.validate()
        self.configuration = configuration
    }

    /// `gpsd host:port`, with the device when one is selected.
    public var name: String {
        if let devicePath = configuration.devicePath { return "gpsd \(configuration.endpoint) \(devicePath)" }
        return "gpsd \(configuration.endpoint)"
    }

    /// How many gpsd messages (of any class) this source has read over all its connections.
    public var messagesRead: Int { state.messagesRead.load(ordering: .relaxed) }

    /// Connects, enables the WATCH and streams events, reconnecting by itself; ending the iteration
    /// disables the WATCH and closes the connection.
    public func listen(_ context: LocationSourceContext) -> AsyncThrowingStream<LocationSourceEvent, any Error> {
        events(reconnecting: true)
    }

    /// The event stream of one worker thread.
    func events(reconnecting: Bool) -> AsyncThrowingStream<LocationSourceEvent, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: LocationSourceEvent.self, throwing: (any Error).self)
        let worker: GPSDStreamWorker
        do {
            worker = try GPSDStreamWorker(configuration: configuration, reconnects: reconnecting, state: state)
        } catch {
            continuation.finish(throwing: error)
            return stream
        }
        continuation.onTermination = { _ in worker.stop() }
        worker.start(
            sink: { continuation.yield($0) },
            finish: { continuation.finish(throwing: $0) })
        return stream
    }

    /// One position: connects, waits for the first fix whose horizontal accuracy is at most
    /// `desiredAccuracy` metres (any fix when `nil`), or the best fix seen within `timeout`, and disconnects.
    ///
    /// - Throws: ``LocationError`` with code ``LocationError/Code/sourceUnavailable`` when gpsd cannot be
    ///   reached, ``LocationError/Code/sourceFailed`` when it went away before any fix,
    ///   ``LocationError/Code/noFix`` when no fix arrived in time, and ``LocationError/Code/cancelled``
    ///   when the calling task is cancelled.
    public func currentLocation(
        desiredAccuracy: Double? = nil,
        timeout: Duration,
        clock: any Clock<Duration> = ContinuousClock()
    ) async throws(LocationError) -> Location {
        let stream = events(reconnecting: false)
        let selector = Locked(AcquisitionSelector(desiredAccuracy: desiredAccuracy))
        let failure = Locked<LocationError?>(nil)
        let timeline = Timeline(clock: clock)
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    do {
                        for try await event in stream {
                            if case .location(let location) = event, selector.withLock({ $0.offer(location) }) {
                                return
                            }
                        }
                    } catch let error as LocationError {
                        failure.withLock { $0 = error }
                    }
                }
                group.addTask { try await timeline.sleep(for: timeout) }
                try await group.next()
                group.cancelAll()
            }
        } catch {
            throw LocationError(.cancelled, "the position request to gpsd at \(configuration.endpoint) was cancelled")
        }
        if let best = selector.value.best { return best }
        if let error = failure.value { throw error }
        throw LocationError(
            .noFix, "gpsd at \(configuration.endpoint) gave no fix within \(timeout.seconds) s")
    }
}
