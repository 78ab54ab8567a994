import LocationCore
import Synchronization

/// The live location source: fixes from gpsd, read through libgps.
///
/// It connects to gpsd at ``GPSDConfiguration/host``:``GPSDConfiguration/port``, enables a JSON WATCH
/// (of one device when ``GPSDConfiguration/devicePath`` is set) and turns the TPV and SKY reports into
/// one `Location` per receiver epoch:
///
/// - Only real fixes (mode 2D or 3D, with a time and a coordinate) are delivered; a fix whose time is
///   not later than the last delivered one is never delivered again.
/// - Values gpsd did not send are `nil`. `altitude` is `altMSL`, `ellipsoidalAltitude` is `altHAE`,
///   `horizontalAccuracy` is `eph` (or the root sum of squares of `epx` and `epy` when gpsd sends no
///   `eph`), `verticalAccuracy` is `epv`, `speedAccuracy` is `eps`, `course` is `track`,
///   `courseAccuracy` is `epd`, `satellitesUsed` comes from the latest SKY, `source` is the device path
///   and `timestamp` the fix time.
/// - Fix loss reports `.status(.noFix)` and a `LocationError.Code.fixLost` error; the next fix
///   reports `.status(.hasFix)`.
/// - When gpsd cannot be reached, closes the connection, or sends nothing for
///   ``GPSDConfiguration/watchdogTimeout``, the source reports `.status(.unavailable)` and one error per
///   outage (`LocationError.Code.sourceUnavailable` or `LocationError.Code.sourceFailed`) and
///   reconnects with capped exponential backoff; when data flows again the next report announces
///   `.status(.hasFix)` or `.status(.noFix)`.
///
/// What gpsd sends is checked before anything is taken from it (see the guarantees in docs/TESTING.md):
///
/// - Each line must be one well-formed JSON object with a `class`, at most 64 KiB long. Anything else
///   (garbage, a cut line, `NaN` or `Infinity`, two objects on a line, a longer line) is skipped and
///   counted in ``linesSkipped``; reading goes on with the next line. Memory stays the same whatever the
///   peer sends. If the very first line of a connection is not gpsd JSON, the peer is not gpsd: the
///   connection fails with `LocationError.Code.sourceUnavailable` and is retried with backoff.
/// - A TPV with an impossible mode (not 0–3), time (not RFC 3339, or outside 1980-01-06…2200-01-01),
///   latitude (outside ±90) or longitude (outside ±180) is refused whole: no `Location` is made from it.
///   A TPV with mode 2/3 but no position is partial (gpsd sends them) and never makes a fix by itself. Any other value outside its range (a negative error
///   estimate, a speed beyond 100 km/s, a track beyond 360°...) is left out (`nil`); the rest is used.
/// - Each kind of such problem is reported once per connection as a `LocationError.Code.invalidData`
///   error naming gpsd's address and what was wrong; classes this code does not know are ignored quietly.
/// - gpsd's own ERROR answer to the WATCH (such as "No such device"), and a gpsd whose device list
///   stays empty, are reported once as `LocationError.Code.sourceUnavailable` and retried with backoff.
///
/// In continuous mode the reader thread hands reports to a delivery thread of their own
/// (`GPSDReportRelay`) rather than a task, which keeps the delay from socket to delegate small; a
/// consumer that blocks never stops the reader from draining gpsd (which drops clients that stop
/// reading), and at most ``GPSDConfiguration/maximumPendingReports`` reports wait: older fixes are dropped
/// and counted (``fixesDropped``, and one `LocationError.Code.consumerOverrun` error). In duty-cycled
/// mode each acquisition opens its own connection (``listen(_:)``, driven by `ListeningLocationSource`'s
/// acquisition logic), and between acquisitions there is no connection at all, so gpsd may idle the
/// receiver and this process sleeps.
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

    /// How many fixes were dropped because the consumer did not keep up; each drop was also reported as
    /// a `LocationError.Code.consumerOverrun` error.
    public var fixesDropped: Int { state.fixesDropped.load(ordering: .relaxed) }

    /// How many lines this source refused as unusable over all its connections: not one well-formed JSON
    /// object, longer than 64 KiB, or a TPV with an impossible mode, time or coordinate.
    public var linesSkipped: Int { state.linesSkipped.load(ordering: .relaxed) }

    /// Runs in whatever mode the context asks for, following mode changes, until the task is cancelled.
    public func run(_ context: LocationSourceContext) async throws {
        var mode = context.mode
        while !Task.isCancelled {
            let next: AcquisitionMode
            switch mode {
            case .continuous:
                next = try await runContinuously(context)
            case .dutyCycled:
                next = try await runDutyCycled(mode, context)
            }
            if Task.isCancelled || next == mode { return }
            mode = next
        }
    }

    /// Reports from the reader thread until the mode changes; returns the new mode. The threads have
    /// ended, and every report read was handed on, when this returns.
    private func runContinuously(_ context: LocationSourceContext) async throws -> AcquisitionMode {
        let worker = try GPSDStreamWorker(configuration: configuration, reconnects: true, state: state)
        let relay = GPSDReportRelay(
            capacity: configuration.maximumPendingReports, endpoint: configuration.endpoint,
            countDrop: { [state] in state.fixesDropped.add(1, ordering: .relaxed) })
        let (ended, endedContinuation) = AsyncStream.makeStream(of: Void.self)
        relay.start(sink: { context.report($0) }, finished: { endedContinuation.finish() })
        worker.start(sink: { relay.submit($0) }, finish: { _ in relay.finish() })
        let next = await withTaskCancellationHandler {
            await context.nextMode(after: .continuous)
        } onCancel: {
            worker.stop()
        }
        worker.stop()
        for await _ in ended {}
        return next
    }

    /// Runs duty-cycled acquisitions until the mode changes; returns the new mode (or `mode` itself
    /// when cancelled). Every acquisition has ended when this returns.
    private func runDutyCycled(_ mode: AcquisitionMode, _ context: LocationSourceContext) async throws -> AcquisitionMode {
        let acquisitions = DutyCycledAcquisitions(source: self)
        return try await withThrowingTaskGroup(of: AcquisitionMode?.self) { group in
            group.addTask {
                try await acquisitions.run(context)
                return nil
            }
            group.addTask { await context.nextMode(after: mode) }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first ?? mode
        }
    }

    /// Connects, enables the WATCH and streams events, reconnecting by itself; ending the iteration
    /// disables the WATCH and closes the connection.
    ///
    /// In duty-cycled mode the connection is closed right after the first fix that meets the desired
    /// accuracy, by the reading thread itself, so nothing more is read however late the consumer is.
    public func listen(_ context: LocationSourceContext) -> AsyncThrowingStream<LocationSourceEvent, any Error> {
        if case .dutyCycled(let cycle) = context.mode {
            return events(reconnecting: true, stopAtAccuracy: .some(cycle.desiredAccuracy))
        }
        return events(reconnecting: true)
    }

    /// The event stream of one worker thread.
    func events(reconnecting: Bool, stopAtAccuracy: Double?? = nil) -> AsyncThrowingStream<LocationSourceEvent, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: LocationSourceEvent.self, throwing: (any Error).self)
        let worker: GPSDStreamWorker
        do {
            worker = try GPSDStreamWorker(
                configuration: configuration, reconnects: reconnecting, state: state, stopAtAccuracy: stopAtAccuracy)
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
    /// - Throws: `LocationError` with code `LocationError.Code.sourceUnavailable` when gpsd cannot be
    ///   reached, `LocationError.Code.sourceFailed` when it went away before any fix,
    ///   `LocationError.Code.noFix` when no fix arrived in time, and `LocationError.Code.cancelled`
    ///   when the calling task is cancelled.
    public func currentLocation(
        desiredAccuracy: Double? = nil,
        timeout: Duration,
        clock: any Clock<Duration> = ContinuousClock()
    ) async throws(LocationError) -> Location {
        let timeline = Timeline(clock: clock)
        let acquired: AcquisitionSelector.Acquired
        do {
            acquired = try await AcquisitionSelector.acquire(
                desiredAccuracy: desiredAccuracy, from: events(reconnecting: false), until: timeline.now + timeout,
                timeline: timeline)
        } catch {
            throw LocationError(.cancelled, "the position request to gpsd at \(configuration.endpoint) was cancelled")
        }
        if let best = acquired.best { return best }
        if let error = acquired.failure as? LocationError { throw error }
        throw LocationError(
            .noFix, "gpsd at \(configuration.endpoint) gave no fix within \(timeout.seconds) s")
    }
}

/// The source seen only through ``listen(_:)``, so ``ListeningLocationSource``'s own `run` performs the
/// duty-cycled acquisitions.
private struct DutyCycledAcquisitions: ListeningLocationSource {
    let source: GPSDLocationSource

    var name: String { source.name }

    func listen(_ context: LocationSourceContext) -> AsyncThrowingStream<LocationSourceEvent, any Error> {
        source.listen(context)
    }
}
