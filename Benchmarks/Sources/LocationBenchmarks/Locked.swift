import Synchronization

/// A value behind a mutex that closures and tasks can share (the measuring code's own; the library's is
/// not visible outside its package).
package final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    package init(_ value: Value) {
        mutex = Mutex(value)
    }

    /// Runs `body` with exclusive access to the value.
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try mutex.withLock { try body(&$0) }
    }

    /// A copy of the value.
    package var value: Value { mutex.withLock { $0 } }
}
