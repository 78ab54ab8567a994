import CLibFuzzer
import Foundation
import LocationDevSupport

#if canImport(Glibc)
    import Glibc
#endif

// parser-fuzz: the fuzz targets of every parser besides GPX (see ParserFuzzHarness, in the root package's
// internal LocationDevSupport), one process per target.
//
//   parser-fuzz --prepare DIR               write each target's seeds to DIR/TARGET/seeds
//   PARSER_FUZZ_TARGET=T parser-fuzz ...     built with `-sanitize=fuzzer -DPARSER_LIBFUZZER`: libFuzzer on
//                                           target T, with its flags and corpus directories (scripts/fuzz)
//   parser-fuzz TARGET INPUT...             otherwise: each INPUT file once through TARGET's checks

/// The target this process fuzzes, from `PARSER_FUZZ_TARGET`.
let fuzzTarget: ParserFuzzHarness.Target? = ProcessInfo.processInfo.environment["PARSER_FUZZ_TARGET"]
    .flatMap(ParserFuzzHarness.Target.init(rawValue:))

#if PARSER_LIBFUZZER
    /// libFuzzer's entry point: one input through the target's checks; a violated property stops the
    /// process. (Only in the fuzz build, which links libFuzzer.)
    @_cdecl("LLVMFuzzerTestOneInput")
    func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
        let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
        checkOrStop(fuzzTarget ?? .gpsdJSON, bytes)
        return 0
    }
#endif

/// Runs the checks on one input; a violated property is printed and stops the process.
func checkOrStop(_ target: ParserFuzzHarness.Target, _ bytes: [UInt8]) {
    do {
        try ParserFuzzHarness.check(target, bytes)
    } catch {
        FileHandle.standardError.write(Data("parser-fuzz: property violated: \(error)\n".utf8))
        fatalError("parser-fuzz: property violated")
    }
}

func fail(_ message: String, status: Int32 = 64) -> Never {
    FileHandle.standardError.write(Data("parser-fuzz: \(message)\n".utf8))
    exit(status)
}

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--prepare" {
    guard arguments.count == 2 else { fail("usage: parser-fuzz --prepare DIR") }
    for target in ParserFuzzHarness.Target.allCases {
        let directory = "\(arguments[1])/\(target.rawValue)/seeds"
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            for (index, seed) in ParserFuzzHarness.seeds(target).enumerated() {
                try Data(seed).write(to: URL(fileURLWithPath: "\(directory)/seed-\(index)"))
            }
        } catch {
            fail("cannot write the seeds to \(directory): \(error)", status: 73)
        }
    }
    exit(0)
}

#if PARSER_LIBFUZZER
    guard fuzzTarget != nil else {
        fail("set PARSER_FUZZ_TARGET to one of \(ParserFuzzHarness.Target.allCases.map(\.rawValue).joined(separator: ", "))")
    }
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOneInput(data, size) })
#else
    guard let name = arguments.first, let target = ParserFuzzHarness.Target(rawValue: name), arguments.count >= 2 else {
        fail("usage: parser-fuzz TARGET INPUT... (\(ParserFuzzHarness.Target.allCases.map(\.rawValue).joined(separator: ", "))), --prepare DIR")
    }
    for input in arguments.dropFirst() {
        guard let data = FileManager.default.contents(atPath: input) else { fail("cannot read \(input)", status: 66) }
        checkOrStop(target, [UInt8](data))
        print("\(input): ok")
    }
#endif
