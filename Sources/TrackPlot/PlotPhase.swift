/// The app's lifecycle phase while a point was delivered or acquired, which sets its colour.
package enum PlotPhase: Int, Sendable, CaseIterable, Hashable {
    /// Active or inactive: the high-accuracy policy.
    case foreground
    /// Executing in the background: the reduced policy, delivered live.
    case background
    /// Suspended: fixes acquired and held for a batch.
    case suspended
    /// No lifecycle is known (a GPX file).
    case unknown

    /// The name shown in the legend.
    package var label: String {
        switch self {
        case .foreground: "foreground"
        case .background: "background"
        case .suspended: "suspended (held)"
        case .unknown: "track"
        }
    }

    /// The CSS class and colour of the phase's line and dots.
    var cssClass: String {
        switch self {
        case .foreground: "fg"
        case .background: "bg"
        case .suspended: "su"
        case .unknown: "tr"
        }
    }

    /// The stroke colour; chosen to stay apart for colour-blind readers (blue, orange, purple).
    package var colour: String {
        switch self {
        case .foreground: "#1f5fbf"
        case .background: "#e07b00"
        case .suspended: "#8e3bb3"
        case .unknown: "#1f5fbf"
        }
    }
}
