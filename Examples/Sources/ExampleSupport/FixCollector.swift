// A delegate that keeps state correctly under Swift 6.
//
// The manager calls its delegate serially, but from whichever thread caused the event, so a delegate is
// `Sendable`. A `final class` with its mutable state behind a `Mutex` (from Synchronization) is the
// simplest shape that compiles in the Swift 6 language mode: a plain `var` in the class does not.
import LocationCore
import Synchronization

/// Collects what a ``LocationManager`` delivers: live fixes, held batches (one call each) and errors.
public final class FixCollector: LocationManagerDelegate {
    /// What has been delivered so far.
    public struct Snapshot: Sendable {
        /// Every live fix, oldest first.
        public var live: [Location] = []
        /// Each held batch as it was delivered: one array per `didUpdateLocations` call that flushed it.
        public var heldBatches: [[Location]] = []
        /// Every error, in order.
        public var errors: [LocationError] = []
    }

    private let state = Mutex(Snapshot())

    public init() {}

    /// A copy of what has been delivered so far.
    public var snapshot: Snapshot { state.withLock { $0 } }

    /// Every event comes here (the protocol's other methods are adapters called from its default
    /// implementation), serially and in the stream's order.
    public func locationManager(_ manager: LocationManager, didReceive event: LocationEvent) {
        state.withLock { state in
            switch event {
            case .locations(let locations, .live): state.live.append(contentsOf: locations)
            case .locations(let locations, .held): state.heldBatches.append(locations)
            case .error(let error): state.errors.append(error)
            default: break
            }
        }
    }
}
