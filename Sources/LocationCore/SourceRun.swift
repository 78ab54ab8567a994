/// A ``LocationSource`` running in a task of its own, in a mode its owner can change: how the
/// ``LocationManager`` and the daemon's shared receiver each run their source.
package struct SourceRun: Sendable {
    /// The context the source runs with: its mode, clock and reporting.
    package let context: LocationSourceContext
    /// The task the source runs in; cancelling it stops the source (and `ended` is not called).
    package let task: Task<Void, Never>

    /// Starts `source` in `mode`. Its events go to `report`, one at a time, in order; when it returns or
    /// throws (not when cancelled), `ended` gets the result.
    package init(
        _ source: any LocationSource, clock: any Clock<Duration>, mode: AcquisitionMode,
        report: @escaping @Sendable (LocationSourceEvent) -> Void,
        ended: @escaping @Sendable (Result<Void, any Error>) -> Void
    ) {
        let context = LocationSourceContext(clock: clock, mode: mode, sink: report)
        self.context = context
        task = Task {
            do {
                try await source.run(context)
                ended(.success(()))
            } catch is CancellationError {
                return
            } catch {
                ended(.failure(error))
            }
        }
    }
}
