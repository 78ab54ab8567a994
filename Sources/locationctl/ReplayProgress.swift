import Foundation
import LocationCore

/// A one-line progress display on standard error, refreshed twice a second while a replay runs.
final class ReplayProgress: Sendable {
    private let task: Task<Void, Never>

    private init(task: Task<Void, Never>) {
        self.task = task
    }

    /// Starts the display when `enabled`; `sample` returns the fixes written and the track time so far.
    static func start(enabled: Bool, sample: @escaping @Sendable () -> (Int, Duration)) -> ReplayProgress? {
        guard enabled else { return nil }
        let task = Task {
            while !Task.isCancelled {
                let (fixes, trackTime) = sample()
                let seconds = Int(trackTime.seconds)
                let clock = String(format: "%02d:%02d:%02d", seconds / 3600, seconds / 60 % 60, seconds % 60)
                FileHandle.standardError.write(Data("\r\u{1B}[Kreplay: \(fixes.counted("fix")), track time \(clock)".utf8))
                try? await Task.sleep(for: .milliseconds(500))
            }
        }
        return ReplayProgress(task: task)
    }

    /// Stops and clears the display.
    func stop() {
        task.cancel()
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}
