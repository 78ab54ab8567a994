/// The version `locationctl --version` and `locationd --version` print, defined once for both.
///
/// A constant rather than something read from git at run time: an installed binary has no checkout
/// beside it, and the two programs must never disagree.
package enum ServiceVersion {
    /// The release, as `MAJOR.MINOR.PATCH`.
    package static let string = "0.1.0"
}
