import Foundation
import LocationCore
import LocationGPSD

/// Runs a source with a real clock and records every event it reports.
final class EventRecorder: Sendable {
    private let recorded = Locked<[LocationSourceEvent]>([])
    let context: LocationSourceContext
    private let task: Locked<Task<Void, Never>?> = Locked(nil)
    /// What `run` threw, if it ended by throwing.
    let runError = Locked<(any Error)?>(nil)

    /// Records in `mode`; `afterRecording` runs on the reporting thread after each event is recorded, so a
    /// test can play a consumer that is slow.
    init(
        mode: AcquisitionMode = .continuous,
        afterRecording: @escaping @Sendable (LocationSourceEvent) -> Void = { _ in }
    ) {
        let recorded = self.recorded
        context = LocationSourceContext(clock: ContinuousClock(), mode: mode) { event in
            recorded.withLock { $0.append(event) }
            afterRecording(event)
        }
    }

    /// Starts `source.run` in a task.
    func start(_ source: some LocationSource) {
        let context = self.context
        let runError = self.runError
        task.withLock {
            $0 = Task {
                do { try await source.run(context) } catch { runError.withLock { $0 = error } }
            }
        }
    }

    /// Cancels the run and waits until it has ended.
    func stop() async {
        let running = task.withLock { task in
            defer { task = nil }
            return task
        }
        running?.cancel()
        await running?.value
    }

    var events: [LocationSourceEvent] { recorded.value }

    var locations: [Location] {
        events.compactMap { if case .location(let location) = $0 { location } else { nil } }
    }

    var errors: [LocationError] {
        events.compactMap { if case .error(let error) = $0 { error } else { nil } }
    }

    var statuses: [LocationSourceStatus] {
        events.compactMap { if case .status(let status) = $0 { status } else { nil } }
    }

    /// Waits (real time, polling) until `condition` holds or `timeout` passes; returns whether it held.
    @discardableResult
    func wait(timeout: Duration, until condition: (EventRecorder) -> Bool) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            if condition(self) { return true }
            try? await Task.sleep(for: .milliseconds(25))
        }
        return condition(self)
    }
}
