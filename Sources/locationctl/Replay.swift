import ArgumentParser
import Foundation
import LocationControl
import LocationCore
import LocationGPX
import LocationService
import UnixSignals

/// `locationctl replay`: plays a GPX file through a LocationManager, optionally driving the lifecycle.
struct Replay: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Replay a GPX file through the location manager.",
        discussion: """
            Points are delivered at their recorded pace (or --speed times faster, or --fast as fast as \
            possible). --lifecycle drives the app lifecycle in track time, for example \
            "120s:background,240s:suspended,480s:active": in the background the reduced policy takes one \
            fix per --reduced-interval. Without the background location mode (the default) those fixes are \
            held from the moment the app enters the background and arrive as one batch on its return to \
            the foreground; with --background-location on they are delivered live, suspended or not. When \
            the replay ends while fixes are still held, the app returns to the foreground so that nothing \
            is lost. A replay ended by a signal completes its output (a GPX \
            file stays valid) and exits 130 after SIGINT (Ctrl-C), 143 after SIGTERM, 129 after SIGHUP. \
            In text, locations go to standard output and state, batch and error lines to standard error.
            """)

    @Argument(help: ArgumentHelp("The GPX file to play; - reads standard input.", valueName: "FILE.gpx"))
    var file: String

    @OptionGroup var replayOptions: ReplayOptions

    @Option(help: ArgumentHelp("high: the app stays in the foreground; reduced: it runs in the background (its fixes held and delivered at the end, unless --background-location on).", valueName: "high|reduced"))
    var policy: AccuracyPolicy = .high

    @Option(help: ArgumentHelp("Lifecycle changes in track time, e.g. 120s:background,240s:suspended,480s:active.", valueName: "SCRIPT"))
    var lifecycle: String?

    @Option(help: OutputFormat.help([.text, .json, .gpx, .nmea]))
    var format: OutputFormat = .text

    @Option(help: ArgumentHelp("Write to this file instead of standard output.", valueName: "FILE"))
    var output: String?

    @OptionGroup(title: "Logging") var logOptions: LogOutputOptions

    @OptionGroup var policyOptions: PolicyOptions

    @OptionGroup(title: "Regions") var regionOptions: RegionOptions

    func run() async throws {
        try await runReportingFailures {
            try await replay()
        }
    }

    private func replay() async throws {
        // `-` is standard input, as for most tools that read files.
        let file = self.file == "-" ? "/dev/stdin" : self.file
        let settings = try await policyOptions.resolve()
        let regions = try regionOptions.resolve()
        try ReplayOptions.checkReadable(file)
        try OutputPathCheck.check(output, isNot: self.file)
        let script: LifecycleScript
        do { script = try LifecycleScript(parsing: lifecycle ?? "") } catch { throw CommandFailure.usage(error.message) }

        let options = try replayOptions.sourceOptions()
        signal(SIGPIPE, SIG_IGN)
        let writer: EventWriter
        // Paced, every event is written at once (a file holds every point as it is replayed); as fast as
        // possible, in large pieces.
        // A progress line on standard error while the output goes to a terminal or a file, never into a pipe.
        let showsProgress = isatty(STDERR_FILENO) == 1 && (isatty(STDOUT_FILENO) == 1 || output != nil)
        let log = try logOptions.resolve(output: output)
        do throws(LocationError) {
            writer = try EventWriter(format: format, path: output, flushEachEvent: !replayOptions.fast, clearsProgressLine: showsProgress, log: log)
        } catch {
            throw CommandFailure.openingOutput(error)
        }
        let driver = TrackTimeLifecycle(script: script)
        let replay: GPXReplaySource
        do { replay = try GPXReplaySource(path: file, options: options) } catch { throw CommandFailure.usage(error.message) }
        let session = try LocationSession(
            source: driver.drivingLifecycle(of: replay), settings: settings,
            startState: policy == .reduced ? .background : .active, lifecycleClock: driver.clock,
            showsLaunch: format == .json, endsWithSource: true
        ) { event in writer.write(event) }
        driver.drive(session.application)
        let manager = session.manager

        let progress = ReplayProgress.start(enabled: showsProgress) {
            (writer.locationCount, driver.trackTime)
        }
        let rotates = log.rotation != nil
        let interrupts = await Interrupts.install(hangupReopens: rotates)
        let reopening = rotates ? await Interrupts.reopenOnHangup(writer) : nil
        defer { reopening?.cancel() }
        for region in regions { manager.startMonitoring(region) }
        manager.startUpdatingLocation()
        let outcome = await withTaskGroup(of: ReplayOutcome.self) { group in
            group.addTask {
                for await status in session.sourceStopped { return status == .ended ? .ended : .failed }
                return .ended
            }
            group.addTask {
                for await signal in interrupts { return .interrupted(signal) }
                return .interrupted(.sigterm)
            }
            group.addTask {
                for await _ in writer.stops { return .outputStopped }
                return .ended
            }
            let first = await group.next() ?? .ended
            group.cancelAll()
            return first
        }
        progress?.stop()
        // Fixes still held when the track ends are delivered rather than lost (unless nobody reads them).
        await session.finish(deliverHeld: outcome != .outputStopped)
        for failure in driver.failures { writer.write(.error(failure)) }
        withExtendedLifetime(session) {}
        do throws(EventWriter.Failure) { try writer.finish() } catch {
            if let failure = CommandFailure.from(error) { throw failure }
            return
        }
        if outcome == .failed, let error = session.sourceFailure {
            throw error.code == .sourceUnavailable ? CommandFailure.missingInput(error.message) : .badData(error.message)
        }
        // The output is complete (a GPX document closed), but the replay did not reach its end: say so.
        if case .interrupted(let signal) = outcome { throw CommandFailure.interrupted(by: signal) }
    }
}

/// How a replay ended.
enum ReplayOutcome: Sendable, Equatable {
    case ended, failed, interrupted(UnixSignal), outputStopped
}
