import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Which sanitizer, if any, this process was built with.
///
/// AddressSanitizer's shadow memory and quarantine, and ThreadSanitizer's shadow, inflate resident memory
/// many times over, so tests that bound memory growth print the figure instead of asserting it there.
public enum Sanitizer {
    /// `"address"` or `"thread"` in a sanitized build, `nil` otherwise.
    public static let active: String? = {
        for (symbol, name) in [("__asan_init", "address"), ("__tsan_init", "thread")]
        where dlsym(UnsafeMutableRawPointer(bitPattern: 0), symbol) != nil {
            return name
        }
        return nil
    }()

    /// Whether memory figures mean what they say in this build.
    public static var memoryFiguresAreMeaningful: Bool { active == nil }

    /// Whether deadlines that measure speed under load mean what they say in this build: a sanitizer slows
    /// every instrumented process several times over, the test runner's own threads included.
    public static var speedUnderLoadIsMeaningful: Bool { active == nil }

    /// The tests deliberately not run under each sanitizer, with the reason for each, from the one list of
    /// them, `scripts/sanitizers/not-run` in the package (which `scripts/sanitize` prints and checks):
    /// sanitizer → test → reason. A test is named as `swift test` names it: `MODULE.SUITE`, or
    /// `MODULE.SUITE/TEST()` for one test.
    public static let exclusions: [String: [String: String]] = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let path = root.appendingPathComponent("scripts/sanitizers/not-run").path
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [:] }
        var exclusions: [String: [String: String]] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let fields = line.split(maxSplits: 2, whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count == 3 else { continue }
            exclusions[String(fields[0]), default: [:]][String(fields[1])] =
                fields[2].trimmingCharacters(in: .whitespaces)
        }
        return exclusions
    }()

    /// Why `test` (`MODULE.SUITE` or `MODULE.SUITE/TEST()`) is not run in this build: `nil` when it runs,
    /// which is always in a build without a sanitizer.
    public static func exclusion(of test: String) -> String? {
        guard let active else { return nil }
        return exclusions[active]?[test].map { "not run under \(active == "thread" ? "ThreadSanitizer" : "AddressSanitizer") (scripts/sanitizers/not-run): \($0)" }
    }
}
