import CLibFuzzer
import Foundation
import LocationDevSupport
import LocationGPX

#if canImport(Glibc)
    import Glibc
#endif

// gpx-fuzz: the fuzz target of the GPX reader (see GPXFuzzHarness, in the root package's internal
// LocationDevSupport, for what it checks), and a driver that
// runs chosen inputs through the reader.
//
//   gpx-fuzz --prepare DIR              write the seed corpus (DIR/seeds) and the dictionary (DIR/gpx.dict)
//   gpx-fuzz --read FILE                stream FILE through GPXReader in this process; print every point, then
//                                       one JSON line: points, error, RSS before and at its peak (the peak is
//                                       reset first, so the growth is the read's own), seconds, sanitizer
//   gpx-fuzz --read-into-memory FILE    the same, but read FILE whole into memory first (shows that the RSS
//                                       figure sees memory that is used)
//   gpx-fuzz INPUT...                   built with `-sanitize=fuzzer -DGPX_LIBFUZZER`: libFuzzer, with its
//                                       flags and corpus directories (scripts/fuzz); otherwise each INPUT
//                                       file (or every file in an INPUT directory) once through the checks

/// libFuzzer's entry point: one input through every check; a violated property stops the process.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    _ = checkOrStop(bytes)
    return 0
}

/// Runs the checks on one input; a violated property is printed and stops the process.
func checkOrStop(_ bytes: [UInt8]) -> GPXFuzzHarness.Outcome {
    do {
        return try GPXFuzzHarness.check(bytes)
    } catch {
        FileHandle.standardError.write(Data("gpx-fuzz: property violated: \(error)\n".utf8))
        fatalError("gpx-fuzz: property violated")
    }
}

func fail(_ message: String, status: Int32 = 64) -> Never {
    FileHandle.standardError.write(Data("gpx-fuzz: \(message)\n".utf8))
    exit(status)
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "--prepare":
    guard arguments.count == 2 else { fail("usage: gpx-fuzz --prepare DIR") }
    do {
        try FuzzSeeds.write(to: arguments[1] + "/seeds", dictionaryPath: arguments[1] + "/gpx.dict")
    } catch {
        fail("cannot write the seeds to \(arguments[1]): \(error)", status: 73)
    }
    exit(0)
case "--read", "--read-into-memory":
    guard arguments.count == 2 else { fail("usage: gpx-fuzz \(arguments[0]) FILE") }
    exit(GPXReadProbe.read(arguments[1], intoMemory: arguments[0] == "--read-into-memory"))
default:
    break
}

#if GPX_LIBFUZZER
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOneInput(data, size) })
#else
    guard !arguments.isEmpty, !arguments.contains(where: { $0.hasPrefix("-") }) else {
        fail("usage: gpx-fuzz INPUT... (a build without libFuzzer runs each input once), --prepare DIR, --read FILE")
    }
    var inputs: [String] = []
    for argument in arguments {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory) else {
            fail("\(argument): no such file or directory", status: 66)
        }
        if isDirectory.boolValue {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: argument)) ?? []
            inputs += names.sorted().map { "\(argument)/\($0)" }
        } else {
            inputs.append(argument)
        }
    }
    for input in inputs {
        guard let data = FileManager.default.contents(atPath: input) else { fail("cannot read \(input)", status: 66) }
        let outcome = checkOrStop([UInt8](data))
        let result = outcome.error.map { "\($0.code.rawValue): \($0.message)" } ?? "ok"
        print("\(input): \(outcome.points.count) points, \(result)")
    }
#endif
