import Foundation
import LocationCore

/// The JSON-lines event stream a running `locationctl watch --format jsonl` writes to a file, read as it
/// grows: each poll reads only the new bytes.
final class EventLog {
    /// One event line, decoded as far as the stress tests need.
    struct Event {
        var type: String
        /// The fix time of a location.
        var timestamp: Date?
        /// `code: message` of an error.
        var error: String?
        /// The whole line, for failure messages.
        var line: String
    }

    private let path: String
    private var offset: UInt64 = 0
    private var partial = Data()
    private(set) var events: [Event] = []
    /// Locations and errors seen so far.
    private(set) var locationCount = 0
    private(set) var errorCount = 0
    /// The fix time of the newest location seen so far.
    private(set) var lastTimestamp: Date?

    init(path: String) {
        self.path = path
    }

    /// Reads what was appended since the last poll; returns the number of new events.
    @discardableResult
    func poll() -> Int {
        guard let handle = FileHandle(forReadingAtPath: path) else { return 0 }
        defer { try? handle.close() }
        try? handle.seek(toOffset: offset)
        let data = (try? handle.readToEnd()) ?? Data()
        offset += UInt64(data.count)
        partial.append(data)
        var added = 0
        while let newline = partial.firstIndex(of: 0x0A) {
            let line = String(decoding: partial[partial.startIndex..<newline], as: UTF8.self)
            partial.removeSubrange(partial.startIndex...newline)
            events.append(Self.decode(line))
            added += 1
            switch events.last!.type {
            case "location":
                locationCount += 1
                lastTimestamp = events.last!.timestamp ?? lastTimestamp
            case "error":
                errorCount += 1
            default:
                break
            }
        }
        return added
    }

    /// Polls every 10 ms until `condition` holds or `timeout` passes; returns whether it held.
    @discardableResult
    func wait(timeout: TimeInterval, until condition: (EventLog) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            poll()
            if condition(self) { return true }
            if Date() >= deadline { return false }
            usleep(10_000)
        }
    }

    private static func decode(_ line: String) -> Event {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] else {
            return Event(type: "unreadable", line: line)
        }
        let type = object["type"] as? String ?? "untyped"
        let timestamp = (object["timestamp"] as? String).flatMap { RFC3339.parse($0)?.date }
        let error = type == "error" ? "\(object["code"] as? String ?? "?"): \(object["message"] as? String ?? "?")" : nil
        return Event(type: type, timestamp: timestamp, error: error, line: line)
    }
}
