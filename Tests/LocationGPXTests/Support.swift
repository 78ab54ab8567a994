import Foundation
import LocationCore
import Testing

@testable import LocationGPX

/// Where the real GPX files live: `$GPX_TESTDATA`, else `../shared/testdata/gpx` next to the package.
enum TestData {
    static let directory: String? = {
        if let override = ProcessInfo.processInfo.environment["GPX_TESTDATA"] {
            return FileManager.default.fileExists(atPath: override) ? override : nil
        }
        let packageRoot = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let candidate = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/testdata/gpx").path
        if FileManager.default.fileExists(atPath: candidate) { return candidate }
        print(
            "⚠️ LocationGPX: real GPX test files not found (looked at \(candidate); set GPX_TESTDATA) — "
                + "the tests on real files are SKIPPED")
        return nil
    }()

    static var isAvailable: Bool { directory != nil }

    static func path(_ name: String) -> String { "\(directory ?? "/nonexistent")/\(name)" }
}

/// A fresh temporary directory for one test.
func temporaryDirectory() throws -> String {
    let path = NSTemporaryDirectory() + "/LocationGPXTests-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// Parses GPX text (UTF-8) and returns every point; `chunkSize` exercises chunk boundaries.
func parse(_ text: String, chunkSize: Int = 1 << 18, name: String = "test.gpx") throws(GPXError) -> [GPXPoint] {
    try parse(bytes: Array(text.utf8), chunkSize: chunkSize, name: name)
}

func parse(bytes: [UInt8], chunkSize: Int = 1 << 18, name: String = "test.gpx") throws(GPXError) -> [GPXPoint] {
    let reader = GPXReader(bytes: bytes, name: name, chunkSize: chunkSize)
    var points: [GPXPoint] = []
    while let point = try reader.next() { points.append(point) }
    return points
}

/// The error parsing `text` throws (or `nil` when it parses).
func parseError(_ text: String, chunkSize: Int = 1 << 18) -> GPXError? {
    parseError(bytes: Array(text.utf8), chunkSize: chunkSize)
}

func parseError(bytes: [UInt8], chunkSize: Int = 1 << 18) -> GPXError? {
    do {
        _ = try parse(bytes: bytes, chunkSize: chunkSize)
        return nil
    } catch {
        return error
    }
}

/// A GPX 1.1 document around `body`.
func gpx11(_ body: String, namespaces: String = "") -> String {
    """
    <?xml version="1.0" encoding="UTF-8"?>
    <gpx version="1.1" creator="test" xmlns="http://www.topografix.com/GPX/1/1"\(namespaces)>
    \(body)
    </gpx>
    """
}

func date(_ text: String) -> Date {
    RFC3339.parse(text)!.date
}
