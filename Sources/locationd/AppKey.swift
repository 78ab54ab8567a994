import LocationControl

/// What names an app session in locationd: its owner and its id. Each user's apps are their own, so two users
/// may each have an app `logger`; the shared app `default` has no owner.
struct AppKey: Hashable, Sendable {
    /// The user the app belongs to; `nil` for `default`.
    let owner: UInt32?
    /// The app's id, as clients name it.
    let id: String

    /// The app every connection uses until it opens another.
    static let shared = AppKey(owner: nil, id: ControlRequest.defaultApp)
    /// What a connection acts on after an `open` that failed: no app at all, never the shared one.
    static let none = AppKey(owner: nil, id: "")
}
