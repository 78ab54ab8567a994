import Clocks
import ConcurrencyExtras
import Foundation
import LocationCore
import LocationTesting
import Testing

/// Yields until `condition` holds, at most `attempts` times; never waits on the wall clock.
func eventually(_ attempts: Int = 2000, _ condition: () -> Bool) async -> Bool {
    for _ in 0..<attempts {
        if condition() { return true }
        await Task.yield()
    }
    return condition()
}

/// Mega-yields until `condition` holds, at most `attempts` times; never waits on the wall clock. For a
/// condition that other threads (a delivery thread) make true, which plain yields may outrun.
func megaYielding(_ attempts: Int = 100_000, until condition: () -> Bool) async -> Bool {
    for _ in 0..<attempts {
        if condition() { return true }
        await Task.megaYield()
    }
    return condition()
}

/// A manager wired to a scripted source, a recording delegate and a test clock.
struct Harness {
    let clock = TestClock()
    let source = ScriptedLocationSource()
    let delegate = RecordingDelegate()
    let application: Application
    let manager: LocationManager

    init(
        configuration: LocationManagerConfiguration = .init(),
        application: ApplicationConfiguration = .init(),
        launch: ApplicationState? = .active
    ) throws {
        let app = Application(configuration: application, clock: clock)
        if let launch { try app.transition(to: launch) }
        self.application = app
        manager = try LocationManager(source: source, application: app, configuration: configuration, clock: clock)
        manager.delegate = delegate
    }

    /// Starts updates and waits until the source listens.
    func start() async {
        manager.startUpdatingLocation()
        await source.waitUntilListening()
    }

    /// Lets a mode change reach the source, then waits until its new listener is open.
    func settle() async {
        await Task.megaYield()
        await source.waitUntilListening()
    }

    /// Emits a fix and lets the manager process it.
    func emit(_ location: Location) async {
        source.emit(location)
        await Task.megaYield()
    }

    /// Emits walk fixes `range`, one per second of test clock, as a 1 Hz receiver would.
    func play(_ range: Range<Int>, accuracy: (Int) -> Double? = { _ in 4.5 }) async {
        for index in range {
            source.emit(LocationFixtures.walk(index, accuracy: accuracy(index)))
            await Task.megaYield()
            await clock.advance(by: .seconds(1))
        }
    }
}

/// Runs a test body on the main serial executor so that test-clock timing is deterministic.
func serially(_ body: @Sendable () async throws -> Void) async rethrows {
    try await withMainSerialExecutor { try await body() }
}
