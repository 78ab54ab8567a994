import Dispatch
import Foundation
import LocationCore
import Synchronization

/// Reads a GPX file's points on a thread of its own, a few hundred points ahead of the consumer, so that
/// parsing and whatever the consumer does with each point (a replay delivering it) run side by side.
///
/// Points, the end of the file and a parse error arrive in exactly the order and at exactly the place
/// ``GPXReader`` gives them. At most `chunkCount` chunks of `chunkSize` points wait, so memory stays small
/// and constant; a paced replay just leaves the reading thread asleep. Releasing the reader stops the
/// thread after the chunk it is reading.
final class PrefetchingGPXReader {
    private enum Item: Sendable {
        case points([GPXPoint])
        case end
        case failure(GPXError)
    }

    /// What the reading thread and the consumer share.
    private final class Channel: Sendable {
        let items = Locked<[Item]>([])
        let filled = DispatchSemaphore(value: 0)
        let space: DispatchSemaphore
        let isCancelled = Atomic<Bool>(false)

        init(chunkCount: Int) {
            // Created at 0 and raised, not created at `chunkCount`: libdispatch traps when a semaphore is
            // released holding less than the value it was created with, as this one does whenever the
            // reader goes away with chunks in flight.
            space = DispatchSemaphore(value: 0)
            for _ in 0..<chunkCount { space.signal() }
        }
    }

    /// Moves the reader to the thread that owns it from then on.
    ///
    /// `@unchecked Sendable` is safe: the consumer creates the reader and hands it over before the thread
    /// starts, and never touches it again; only the reading thread uses it afterwards.
    private struct Handover: @unchecked Sendable {
        let reader: GPXReader
    }

    private let channel: Channel
    private var current: [GPXPoint] = []
    private var position = 0
    private var ended: Item?

    /// Opens the file (so an unreadable file fails here, as with ``GPXReader``) and starts reading ahead.
    init(contentsOf path: String, chunkSize: Int = 512, chunkCount: Int = 3) throws(GPXError) {
        let handover = Handover(reader: try GPXReader(contentsOf: path))
        let channel = Channel(chunkCount: max(1, chunkCount))
        self.channel = channel
        let size = max(1, chunkSize)
        let thread = Thread {
            Self.read(handover.reader, into: channel, chunkSize: size)
        }
        thread.name = "gpx read-ahead"
        thread.stackSize = 1 << 20
        thread.start()
    }

    deinit {
        channel.isCancelled.store(true, ordering: .sequentiallyConsistent)
        channel.space.signal()
    }

    /// The next point, `nil` at the end, or the reader's error where it occurred.
    func next() throws(GPXError) -> GPXPoint? {
        while true {
            if position < current.count {
                defer { position += 1 }
                return current[position]
            }
            switch ended {
            case .end: return nil
            case .failure(let error): throw error
            case .points, nil: break
            }
            channel.filled.wait()
            let item = channel.items.withLock { $0.removeFirst() }
            channel.space.signal()
            switch item {
            case .points(let points):
                current = points
                position = 0
            case .end, .failure:
                current = []
                position = 0
                ended = item
            }
        }
    }

    private static func read(_ reader: GPXReader, into channel: Channel, chunkSize: Int) {
        var chunk: [GPXPoint] = []
        chunk.reserveCapacity(chunkSize)
        func send(_ item: Item) -> Bool {
            channel.space.wait()
            if channel.isCancelled.load(ordering: .sequentiallyConsistent) { return false }
            channel.items.withLock { $0.append(item) }
            channel.filled.signal()
            return true
        }
        while true {
            do throws(GPXError) {
                guard let point = try reader.next() else {
                    if !chunk.isEmpty, !send(.points(chunk)) { return }
                    _ = send(.end)
                    return
                }
                chunk.append(point)
                if chunk.count == chunkSize {
                    guard send(.points(chunk)) else { return }
                    chunk.removeAll(keepingCapacity: true)
                }
            } catch {
                if !chunk.isEmpty, !send(.points(chunk)) { return }
                _ = send(.failure(error))
                return
            }
        }
    }
}
