import Foundation

/// locationd's NMEA socket as `status` shows it: where it is and what its readers got.
public struct NMEASocketStatus: Codable, Sendable, Hashable {
    /// The socket path.
    public var path: String
    /// Readers connected now.
    public var connections: Int
    /// Epochs (the sentences of one fix) queued to readers since locationd started, each reader counted.
    public var epochsSent: Int
    /// Epochs readers missed because they were too far behind (a reader that does not read), each reader
    /// counted.
    public var epochsMissed: Int
    /// Connections closed at once because the socket served as many as it takes.
    public var refused: Int

    /// Creates a status.
    public init(path: String, connections: Int, epochsSent: Int, epochsMissed: Int, refused: Int) {
        self.path = path
        self.connections = connections
        self.epochsSent = epochsSent
        self.epochsMissed = epochsMissed
        self.refused = refused
    }
}
