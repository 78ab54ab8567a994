import Foundation

/// Waits for a condition a benchmark depends on, polling, and fails naming it past `timeout`.
package func waitUntil(
    _ what: String, timeout: Duration = .seconds(30), poll: Duration = .milliseconds(20), _ condition: () throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while try !condition() {
        guard ContinuousClock.now < deadline else { throw BenchError("timed out waiting: \(what)") }
        try await Task.sleep(for: poll)
    }
}
