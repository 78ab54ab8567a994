import ArgumentParser
import Foundation

/// The entry point of `locationctl` and `locationd`: parses the command line and runs the command, so that
/// every failure, a mistyped flag included, is one line on standard error with its sysexits code.
///
/// ArgumentParser's own reports span several lines (the error, the usage, a pointer to `--help`); a script or
/// a log reading our stderr gets one line per failure instead, ending with where to find help.
package enum CommandMain {
    /// Parses the arguments as `Root`, runs the command and exits: 0, or the failure's code after one line.
    package static func run<Root: ParsableCommand>(_ root: Root.Type) async -> Never {
        StandardStreams.check()
        var command = parseOrExit(root)
        do {
            if var asynchronous = command as? any AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
        } catch let failure as CommandFailure {
            failure.exit()
        } catch {
            let code = root.exitCode(for: error)
            if code == .success {
                // `--help` and `help` parse as ArgumentParser's help command, whose run asks for the help.
                print(root.fullMessage(for: error))
                exitAfterFlushingStandardOutput(root.configuration.commandName ?? "locationctl")
            }
            let message = root.message(for: error).split(separator: "\n").first.map(String.init) ?? "\(error)"
            // An error nobody mapped to a sysexits code is a bug of ours: EX_SOFTWARE, still one line.
            CommandFailure(exitCode: 70, message: message).exit()
        }
        exitAfterFlushingStandardOutput(root.configuration.commandName ?? "locationctl")
    }

    /// Writes out what `print` buffered (the process may end from any thread, where nothing else would)
    /// and exits 0; a write that fails is exit 74 with one line, a reader that went away a quiet 0.
    private static func exitAfterFlushingStandardOutput(_ program: String) -> Never {
        // fflush(nil) flushes every output stream, standard output included, and fails if a write did.
        if fflush(nil) != 0 {
            let number = errno
            if number != EPIPE {
                EventWriter.writeToStandardError("\(program): cannot write to standard output: \(String(cString: strerror(number)))\n")
                Foundation.exit(74)
            }
        }
        Foundation.exit(0)
    }

    /// Parses the arguments, or prints the help or one line and exits. Synchronous on purpose: what the
    /// parser allocated is still on a thread's stack when the process exits, where LeakSanitizer sees it,
    /// not in an async frame it cannot see.
    /// The command line after the program name. The Swift runtime finds it through `environ`, which a
    /// preloaded library that calls `setenv` first (libfaketime does) moves: the runtime then sees no
    /// arguments at all (swiftlang/swift#76080), and the daemon would start with none of its flags. Read
    /// from `/proc/self/cmdline` then.
    static func arguments() -> [String] { Array(commandLine.dropFirst()) }

    /// The whole command line, the program first (read once).
    static let commandLine: [String] = {
        if !CommandLine.arguments.isEmpty { return CommandLine.arguments }
        guard let bytes = FileManager.default.contents(atPath: "/proc/self/cmdline") else { return [] }
        var fields = bytes.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        // The file ends with a NUL: the split leaves one empty field after it.
        if fields.last == "" { fields.removeLast() }
        return fields
    }()

    /// The first argument, or variable of ours in the environment, that is not UTF-8, named for a person
    /// (`argument 2`, `LOCATIOND_SOCKET`), with its raw bytes. A Swift `String` cannot hold such bytes: the
    /// runtime replaces them with U+FFFD, and a file named so would be looked for under another name.
    static func firstInputNotUTF8() -> (name: String, bytes: [UInt8])? {
        func fields(_ path: String) -> [ArraySlice<UInt8>] {
            guard let raw = FileManager.default.contents(atPath: path) else { return [] }
            var fields = Array(raw).split(separator: 0, omittingEmptySubsequences: false)
            if fields.last?.isEmpty == true { fields.removeLast() }
            return fields
        }
        for (index, field) in fields("/proc/self/cmdline").enumerated().dropFirst()
        where String(validating: field, as: UTF8.self) == nil {
            return ("argument \(index)", Array(field))
        }
        // The variables read as paths or settings: the daemon's own, and where sockets and copies go.
        for field in fields("/proc/self/environ") {
            guard let equals = field.firstIndex(of: UInt8(ascii: "=")),
                let name = String(validating: field[..<equals], as: UTF8.self),
                name.hasPrefix("LOCATIOND_") || name == "XDG_RUNTIME_DIR" || name == "TMPDIR",
                String(validating: field[(equals + 1)...], as: UTF8.self) == nil
            else { continue }
            return (name, Array(field[(equals + 1)...]))
        }
        return nil
    }

    private static func parseOrExit<Root: ParsableCommand>(_ root: Root.Type) -> any ParsableCommand {
        let program = root.configuration.commandName ?? "locationctl"
        if let (name, bytes) = firstInputNotUTF8() {
            let shown = bytes.prefix(120).map { $0 >= 0x20 && $0 < 0x7F ? String(UnicodeScalar($0)) : "\\x" + String($0, radix: 16, uppercase: false).leftPadded }.joined()
            EventWriter.writeToStandardError(
                "\(program): \(name) (\(shown)) is not UTF-8, and \(program) reads text only as UTF-8; for a file or directory so named, rename it or give a link with a UTF-8 name (see '\(program) --help')\n")
            Foundation.exit(64)
        }
        do {
            return try root.parseAsRoot(arguments())
        } catch {
            let code = root.exitCode(for: error)
            if code == .success {
                // --help, -h, help SUBCOMMAND, --experimental-dump-help.
                print(root.fullMessage(for: error))
                exitAfterFlushingStandardOutput(program)
            }
            let message = root.message(for: error).split(separator: "\n").first.map(String.init) ?? "invalid arguments"
            var line = message.hasPrefix("Error: ") ? String(message.dropFirst(7)) : message
            // One line a person can read: 20,000 stray arguments are not all quoted back.
            if line.count > 240 { line = String(line.prefix(200)) + "… (\(line.count - 200) more characters)" }
            EventWriter.writeToStandardError("\(program): \(TerminalText.escaped(line)) (see '\(program) --help')\n")
            Foundation.exit(code.rawValue)
        }
    }
}

extension String {
    /// Two hex digits: `f` becomes `0f`.
    fileprivate var leftPadded: String { count < 2 ? "0" + self : self }
}
