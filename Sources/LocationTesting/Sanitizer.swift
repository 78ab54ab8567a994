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
}
