import Foundation

/// A successful reply as a client receives it: the raw JSON line and typed access to its members.
///
/// ```swift
/// let reply = try client.request(.current(timeout: .seconds(5), accuracy: 50))
/// let location = try reply.decode(Location.self, forKey: "location")
/// ```
public struct ControlResponse: Sendable, Hashable {
    /// The reply line as received, without its `\n`.
    public let line: [UInt8]

    /// Parses a reply line; a failure reply becomes the ``ControlError`` it carries.
    ///
    /// - Throws: The daemon's error (its `code` and `message`) for `"ok":false`, or `protocol-error` if the
    ///   line is not a reply object.
    public init(line: [UInt8]) throws(ControlError) {
        let header: Header
        do {
            header = try JSONDecoder().decode(Header.self, from: Data(line))
        } catch {
            throw ControlError(.protocolError, "the daemon sent a reply that is not a JSON reply object: \(Self.preview(line))")
        }
        guard let ok = header.ok else {
            throw ControlError(.protocolError, "the daemon's reply has no \"ok\": \(Self.preview(line))")
        }
        if !ok {
            // An empty message is no message: the person reading it must learn something.
            let message = header.error?.message.flatMap { $0.isEmpty ? nil : $0 }
            throw ControlError(
                header.error?.code ?? .protocolError,
                message ?? "the daemon reported a failure (\(header.error?.code?.rawValue ?? "no code")) without a message")
        }
        self.line = line
    }

    /// The reply as text, without its `\n`.
    public var text: String { String(decoding: line, as: UTF8.self) }

    /// Decodes the member `key` of the reply object, e.g. `location`, `state`, or `status`.
    ///
    /// - Throws: `protocol-error` naming the key if it is missing or does not decode as `T`.
    public func decode<T: Decodable>(_ type: T.Type, forKey key: String) throws(ControlError) -> T {
        let decoder = JSONDecoder()
        decoder.userInfo[Member<T>.keyInfo] = key
        do {
            return try decoder.decode(Member<T>.self, from: Data(line)).value
        } catch {
            throw ControlError(.protocolError, "the daemon's reply has no valid \"\(key)\": \(error)")
        }
    }

    /// The start of a line for an error message.
    private static func preview(_ line: [UInt8]) -> String {
        let text = String(decoding: line.prefix(200), as: UTF8.self)
        return line.count > 200 ? text + "…" : text
    }

    private struct Header: Decodable {
        struct Failure: Decodable {
            var code: ControlError.Code?
            var message: String?
        }
        var ok: Bool?
        var error: Failure?
    }

    /// Decodes one member named at decode time through `userInfo`.
    private struct Member<Value: Decodable>: Decodable {
        static var keyInfo: CodingUserInfoKey { CodingUserInfoKey(rawValue: "LocationControl.member")! }
        var value: Value

        init(from decoder: any Decoder) throws {
            let name = decoder.userInfo[Self.keyInfo] as? String ?? ""
            let container = try decoder.container(keyedBy: AnyKey.self)
            value = try container.decode(Value.self, forKey: AnyKey(stringValue: name))
        }
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
