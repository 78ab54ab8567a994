import Foundation
import LocationCore
import LocationGPX
import Synchronization

/// Writes ``ServiceEvent``s to standard output or a file in one ``OutputFormat``.
///
/// Text and JSON lines are buffered and written in large pieces; with `flushEachEvent` (live output)
/// every event is written at once. In GPX format locations form one track; other events go to standard
/// error as text, so the GPX stays a valid document. ``finish()`` must be called to complete the output
/// (it closes the GPX document); it is safe to call more than once.
public final class EventWriter: Sendable {
    /// The format written.
    public let format: OutputFormat
    /// The output file, or `nil` for standard output.
    public let path: String?

    private struct State {
        var buffer: [UInt8] = []
        var handle: FileHandle?
        var gpx: GPXWriter?
        var locations = 0
        var finished = false
        var failure: LocationError?
    }

    private let state: Mutex<State>
    private let flushEachEvent: Bool
    private static let flushThreshold = 1 << 16

    /// Opens the output; throws ``LocationError/Code/invalidData`` naming the file if it cannot be created.
    public init(format: OutputFormat, path: String?, flushEachEvent: Bool, creator: String = "locationctl") throws(LocationError) {
        self.format = format
        self.path = path
        self.flushEachEvent = flushEachEvent
        var initial = State()
        let handle: FileHandle
        if let path {
            guard FileManager.default.createFile(atPath: path, contents: nil) else {
                throw LocationError(.invalidData, "cannot create output file \(path): \(String(cString: strerror(errno)))")
            }
            guard let opened = FileHandle(forWritingAtPath: path) else {
                throw LocationError(.invalidData, "cannot open output file \(path) for writing")
            }
            handle = opened
        } else {
            handle = FileHandle.standardOutput
        }
        initial.handle = handle
        if format == .gpx {
            do {
                initial.gpx = try GPXWriter(creator: creator) { bytes in
                    try handle.write(contentsOf: bytes)
                }
            } catch {
                throw LocationError(.invalidData, "cannot start the GPX output: \(error.message)")
            }
        } else {
            initial.buffer.reserveCapacity(Self.flushThreshold + 4096)
        }
        state = Mutex(initial)
    }

    deinit {
        try? finish()
    }

    /// `state.withLock`, with the critical section shown to ThreadSanitizer (see
    /// `ThreadSanitizerAnnotations`; nothing in other builds). `State` holds a writer that is not
    /// `Sendable`, so it cannot be a `Locked`.
    private func withState<Result: Sendable>(_ body: (inout State) -> Result) -> Result {
        state.withLock { state in
            ThreadSanitizerAnnotations.acquired(self)
            defer { ThreadSanitizerAnnotations.releasing(self) }
            return body(&state)
        }
    }

    /// How many locations were written.
    public var locationCount: Int { withState { $0.locations } }

    /// Writes one event.
    public func write(_ event: ServiceEvent) {
        withState { state in
            guard !state.finished, state.failure == nil else { return }
            if case .location = event { state.locations += 1 }
            switch format {
            case .jsonl:
                JSONLineEncoder.append(event, to: &state.buffer)
            case .text:
                state.buffer.append(contentsOf: TextEventFormatter.line(event).utf8)
                state.buffer.append(0x0A)
            case .gpx:
                if case .location(let location) = event {
                    do throws(GPXError) { try state.gpx?.write(location) } catch {
                        state.failure = LocationError(.invalidData, "cannot write GPX: \(error.message)")
                    }
                } else {
                    FileHandle.standardError.write(Data((TextEventFormatter.line(event) + "\n").utf8))
                }
                return
            }
            if flushEachEvent || state.buffer.count >= Self.flushThreshold { flush(&state) }
        }
    }

    /// Writes what is buffered, completes the document, and reports the first write error, if any.
    public func finish() throws(LocationError) {
        let failure = withState { state -> LocationError? in
            if !state.finished {
                state.finished = true
                flush(&state)
                if let gpx = state.gpx {
                    do throws(GPXError) { try gpx.finish() } catch {
                        state.failure = state.failure ?? LocationError(.invalidData, "cannot complete GPX: \(error.message)")
                    }
                }
                if path != nil { try? state.handle?.close() }
            }
            return state.failure
        }
        if let failure { throw failure }
    }

    private func flush(_ state: inout State) {
        guard !state.buffer.isEmpty else { return }
        do {
            try state.handle?.write(contentsOf: state.buffer)
        } catch {
            state.failure = LocationError(.invalidData, "cannot write to \(path ?? "standard output"): \(error)")
        }
        state.buffer.removeAll(keepingCapacity: true)
    }
}
