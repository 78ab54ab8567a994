import Foundation
import LocationCore
import LocationService
import Testing

/// What `ServiceConfiguration.load` says about configuration files a person got wrong.
@Suite("Configuration files: unknown keys, wrong shapes, odd files")
struct ConfigurationFileTests {
    static func load(_ yaml: String, environment: [String: String] = [:]) async throws -> ServiceConfiguration {
        let directory = TemporaryDirectory()
        let path = directory.file("locationd.yaml")
        try Data(yaml.utf8).write(to: URL(fileURLWithPath: path))
        return try await ServiceConfiguration.load(path: path, environment: environment)
    }

    @Test(
        "a misspelt key, a list or a section where a value belongs is refused, naming the key and what was expected",
        arguments: [
            ("gpsd: {hots: x}", "unknown key gpsd.hots; did you mean gpsd.host?"),
            ("reduced: {intervall: 5}", "unknown key reduced.intervall; did you mean reduced.interval?"),
            ("reduce: {interval: 5}", "unknown key reduce; did you mean reduced?"),
            ("reduced: {interval: [1, 2]}", "reduced.interval expects a number in 0.1…604800 s, got a list"),
            ("journal: [a, b]", "journal expects text, got a list"),
            ("backgroundLocation: {on: true}", "backgroundLocation expects on or off, got a section of keys"),
            ("reduced: 5", "reduced is a section; expected keys under it"),
            ("- a\n- b", "expected keys and values"),
            ("gpsd: {port: 2947.5}", "gpsd.port: 2947.5 is not a whole number; use 1…65535"),
            ("batch: {capacity: 1e300}", "batch.capacity: 1e300 is above the largest allowed value; use 1…100000000 fixes"),
            ("reduced: {interval: 1e300}", "reduced.interval: 1e300 is above the largest allowed value; use 0.1…604800 s"),
            ("lifecycle: {didEnterBackgroundBudget: -1}", "lifecycle.didEnterBackgroundBudget: -1 is negative"),
            ("lifecycle: {gracePeriod: 5}", "lifecycle.gracePeriod is gone: a background app is no longer left running for a grace period"),
            ("control: {stallTimeout: .nan}", "control.stallTimeout: '.nan' is not a number"),
            // Found by the yaml-config fuzz target: a list or map as a key trapped in the YAML library.
            ("[]: \u{E1}[]", "a key is a list, not a name"),
            ("reduced: {{a: 1}: 2}", "a key under reduced is a section of keys, not a name"),
        ])
    func refused(yaml: String, message: String) async throws {
        do {
            _ = try await Self.load(yaml)
            Issue.record("\(yaml) was accepted")
        } catch let error as LocationError {
            #expect(error.code == .invalidConfiguration)
            #expect(error.message.contains(message), "\(error.message)")
            #expect(!error.message.contains("\n"))
        }
    }

    @Test("an empty file, or one of comments only, sets nothing and is valid")
    func emptyFilesAreValid() async throws {
        #expect(try await Self.load("") == ServiceConfiguration())
        #expect(try await Self.load("# nothing here\n") == ServiceConfiguration())
    }

    @Test("a variable's error names the variable, not the key")
    func environmentErrorsNameTheVariable() async throws {
        do {
            _ = try await ServiceConfiguration.load(path: nil, environment: ["LOCATIOND_GPSD_PORT": "abc"])
            Issue.record("LOCATIOND_GPSD_PORT=abc was accepted")
        } catch {
            #expect(error.message == "LOCATIOND_GPSD_PORT: 'abc' is not a number; use 1…65535")
        }
    }

    @Test("a device, a FIFO or a directory as the configuration file is refused at once, not read forever")
    func onlyRegularFilesAreRead() async throws {
        let directory = TemporaryDirectory()
        let fifo = directory.file("fifo.yaml")
        #expect(mkfifo(fifo, 0o600) == 0)
        for path in ["/dev/zero", fifo, directory.path] {
            do {
                _ = try await ServiceConfiguration.load(path: path, environment: [:])
                Issue.record("\(path) was read")
            } catch {
                #expect(error.message.contains("is not a regular file"), "\(error.message)")
            }
        }
    }
}
