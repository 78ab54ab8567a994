import Foundation
import GPSDTestSupport
import LocationCore
import LocationService
import LocationTesting
import Testing

/// Feeds hostile numbers to every option of every executable, every configuration key and every
/// environment variable. The options come from the executables' own declarations (ArgumentParser's
/// `--experimental-dump-help`), the keys and variables from ``ServiceConfiguration/keys``, so a new one is
/// covered without anyone adding it here.
@Suite(
    "Boundary sweep: every option, key and variable", .serialized,
    .sanitizerExclusion("LocationServiceTests.BoundarySweepTests"))
struct BoundarySweepTests {
    /// What every surface is fed.
    static let hostileValues = ["0", "-1", "nan", "inf", "-inf", "1e-300", "1e300", "9.3e18", "9" + String(repeating: "9", count: 40)]
    /// Values no number of ours may accept: each must be refused with exit 64.
    static let neverANumber: Set<String> = ["-1", "nan", "inf", "-inf", "1e300", "9.3e18", "9" + String(repeating: "9", count: 40)]
    /// Every exit code the executables document.
    static let documentedCodes: Set<Int32> = [0, 64, 65, 66, 69, 73, 74, 75, 77]
    /// The value names of options that take a number.
    static let numericValueNames: Set<String> = ["SEC", "X", "MPS", "METRES", "N"]

    /// One option as the executable declares it.
    struct DeclaredOption: Sendable, CustomStringConvertible {
        var executable: String
        var subcommand: String?
        var name: String
        var valueName: String
        var isNumber: Bool { numericValueNames.contains(valueName) }
        var description: String { [executable, subcommand, "--\(name)"].compactMap { $0 }.joined(separator: " ") }
    }

    /// Reads the options `executable` declares (and its subcommands'), from its own help dump.
    static func declaredOptions(of executable: String, in directory: TemporaryDirectory) throws -> [DeclaredOption] {
        let result = try Tool.run(executable, ["--experimental-dump-help"], in: directory)
        guard result.status == 0, let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
            let command = object["command"] as? [String: Any]
        else {
            Issue.record("\(executable) --experimental-dump-help: status \(result.status), \(result.stderr)")
            return []
        }
        func options(_ command: [String: Any], subcommand: String?) -> [DeclaredOption] {
            let arguments = command["arguments"] as? [[String: Any]] ?? []
            return arguments.compactMap { argument in
                guard argument["kind"] as? String == "option",
                    let name = (argument["names"] as? [[String: Any]])?.first(where: { $0["kind"] as? String == "long" })?["name"] as? String
                else { return nil }
                return DeclaredOption(
                    executable: executable, subcommand: subcommand, name: name, valueName: argument["valueName"] as? String ?? "")
            }
        }
        var result2 = options(command, subcommand: nil)
        for sub in command["subcommands"] as? [[String: Any]] ?? [] {
            guard let name = sub["commandName"] as? String, name != "help" else { continue }
            result2 += options(sub, subcommand: name)
        }
        return result2
    }

    /// Arguments that make a valid invocation end at once without any service: a one-point file to replay,
    /// a gpsd address nobody listens on, `--check-config`.
    static func context(for option: DeclaredOption, onePoint: String) -> [String] {
        let base: [String]
        switch (option.executable, option.subcommand) {
        case ("locationctl", "replay"?): base = [onePoint]
        case ("locationctl", "plot"?): base = [onePoint, "--output", "plot.svg"]
        case ("locationctl", "watch"?): base = ["--gpsd", "127.0.0.1:9", "--duration", "3"]
        case ("locationctl", "current"?): base = ["--gpsd", "127.0.0.1:9", "--timeout", "3"]
        case ("locationd", nil): base = ["--check-config"]
        default: base = []
        }
        // The option under test replaces the context's own value for it.
        var result: [String] = []
        var index = 0
        while index < base.count {
            if base[index] == "--\(option.name)" {
                index += 2
                continue
            }
            result.append(base[index])
            index += 1
        }
        return (option.subcommand.map { [$0] } ?? []) + result
    }

    /// Checks one run: no signal, a documented code, one line on standard error when it fails, and exit 64
    /// naming the place when the value can never be a number of ours.
    static func check(_ result: ToolResult, refusedAs64: Bool, place: String, _ what: String) {
        #expect(!result.signaled, "\(what): killed by signal \(result.status); \(result.stderr)")
        #expect(documentedCodes.contains(result.status), "\(what): undocumented exit \(result.status); \(result.stderr)")
        if result.status != 0 {
            let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.isEmpty }
            #expect(lines.count == 1, "\(what): \(lines.count) lines on stderr: \(result.stderr)")
        }
        if refusedAs64 {
            #expect(result.status == 64, "\(what): exit \(result.status), expected 64; \(result.stderr)")
            #expect(result.stderr.contains(place), "\(what): the message does not name \(place): \(result.stderr)")
        }
        #expect(!result.stderr.contains("NSCocoaErrorDomain") && !result.stderr.contains("Fatal error"), "\(what): \(result.stderr)")
    }

    /// Under AddressSanitizer every process starts several times slower: one hostile value per option, key
    /// and variable there (enough for what it looks for: a leak or a bad access on the refusal paths), every
    /// value in normal builds. ThreadSanitizer does not run the sweep (see the suite's trait).
    static var values: [String] {
        Sanitizer.active == nil ? hostileValues : ["nan"]
    }

    /// What a surface that takes no number (a path, a name, a URL, on/off) is fed: numbers mean nothing to
    /// it, so two of them (one that looks like an option, one that no parser takes as a number) show that it
    /// refuses or takes them without a signal; every value goes to the numbers, whose parsers they probe.
    static func values(forNumber isNumber: Bool) -> [String] {
        isNumber ? values : values.filter { ["-1", "nan"].contains($0) }
    }

    @Test("every option of locationctl and locationd: no signal, a documented code, one line, numbers refused by name")
    func everyOption() throws {
        let directory = TemporaryDirectory()
        let onePoint = try directory.track("one.gpx", count: 1)
        let options = try Self.declaredOptions(of: "locationctl", in: directory) + Self.declaredOptions(of: "locationd", in: directory)
        // Every subcommand and the daemon have options; the numbers are the ones this sweep exists for.
        #expect(Set(options.map { $0.subcommand ?? $0.executable }) == ["replay", "watch", "current", "sky", "state", "status", "plot", "locationd"])
        #expect(options.filter(\.isNumber).count >= 20, "\(options.filter(\.isNumber))")
        for option in options {
            for value in Self.values(forNumber: option.isNumber) {
                let arguments = Self.context(for: option, onePoint: onePoint) + ["--\(option.name)", value]
                let result = try Tool.run(option.executable, arguments, timeout: 30, in: directory)
                Self.check(
                    result, refusedAs64: option.isNumber && Self.neverANumber.contains(value), place: "--\(option.name)",
                    "\(option) \(value)")
            }
        }
    }

    @Test("every configuration key and LOCATIOND_* variable: no signal, a documented code, one line, numbers refused by name")
    func everyKeyAndVariable() throws {
        let directory = TemporaryDirectory()
        #expect(ServiceConfiguration.keys.count >= 19)
        for key in ServiceConfiguration.keys {
            let isNumber: Bool
            switch key.kind {
            case .number, .integer: isNumber = true
            case .text, .onOff, .choice: isNumber = false
            }
            for value in Self.values(forNumber: isNumber) {
                let refused = isNumber && Self.neverANumber.contains(value)
                let viaEnvironment = try Tool.run(
                    "locationd", ["--check-config"], environment: [key.environmentVariable: value], timeout: 30, in: directory)
                Self.check(viaEnvironment, refusedAs64: refused, place: key.environmentVariable, "\(key.environmentVariable)=\(value)")

                let path = directory.file("sweep.yaml")
                let parts = key.name.split(separator: ".")
                let yaml = parts.count == 2 ? "\(parts[0]):\n  \(parts[1]): \(value)\n" : "\(key.name): \(value)\n"
                try Data(yaml.utf8).write(to: URL(fileURLWithPath: path))
                let viaFile = try Tool.run("locationd", ["--check-config", "--config", path], timeout: 30, in: directory)
                Self.check(viaFile, refusedAs64: refused, place: key.name, "\(key.name): \(value)")
            }
        }
    }

    @Test("each variable's name is the key in capitals with _ for . and camel-case breaks, and it takes effect")
    func variableNamesFollowTheKeys() async throws {
        let names = Dictionary(uniqueKeysWithValues: ServiceConfiguration.keys.map { ($0.name, $0.environmentVariable) })
        #expect(names["reduced.acquisitionTimeout"] == "LOCATIOND_REDUCED_ACQUISITION_TIMEOUT")
        #expect(names["control.stallTimeout"] == "LOCATIOND_CONTROL_STALL_TIMEOUT")
        #expect(names["backgroundLocation"] == "LOCATIOND_BACKGROUND_LOCATION")
        let loaded = try await ServiceConfiguration.load(
            path: nil, environment: ["LOCATIOND_REDUCED_ACQUISITION_TIMEOUT": "12", "LOCATIOND_GPSD_MAX_RECONNECT_DELAY": "7"])
        #expect(loaded.reducedAcquisitionTimeout == 12)
        #expect(loaded.gpsdMaxReconnectDelay == 7)
    }
}
