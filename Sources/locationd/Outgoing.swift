import LocationControl

/// What an app's session sends its watchers: one event, or a held batch already encoded (its batch line and
/// its location lines, one unit, admitted to a watcher's buffer whole or not at all).
enum Outgoing: Sendable {
    case event(ControlEvent)
    case batch(lines: [UInt8], count: Int)
}
