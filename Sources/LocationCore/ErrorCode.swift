/// A stable, extensible error code: a string wrapped in a type, as server libraries spell their error
/// codes, so that a code another version or another program wrote is kept as it is rather than refused.
///
/// Conforming types declare `rawValue` and `init(rawValue:)` and list their known codes as static
/// constants; the string literal, `Codable` and description conformances come from here.
public protocol ErrorCode: RawRepresentable, Sendable, Hashable, Codable, ExpressibleByStringLiteral,
    CustomStringConvertible where RawValue == String
{
    /// Creates a code from its spelling.
    init(rawValue: String)
}

extension ErrorCode {
    /// Creates a code from a string literal.
    public init(stringLiteral value: String) { self.init(rawValue: value) }

    /// Decodes a code from a JSON string.
    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    /// Encodes the code as a JSON string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    /// The raw value.
    public var description: String { rawValue }
}
