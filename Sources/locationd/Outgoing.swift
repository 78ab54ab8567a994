import LocationControl
import LocationCore

/// What an app's session sends its watchers: one event, or a held batch already encoded (one line, admitted
/// to a watcher's buffer whole or not at all, and counted as its fixes when it is not).
enum Outgoing: Sendable {
    case event(LocationEvent)
    case batch(line: [UInt8], count: Int)
}
