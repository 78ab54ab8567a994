import Foundation
import LocationService

#if canImport(Glibc)
import Glibc
#endif

/// Checks on an `--output` path made before anything is opened for writing.
package enum OutputPathCheck {
    /// Refuses an output that is the input itself (the same file after links are followed, or standard input
    /// redirected from it): writing it would truncate or replace the track before it is read.
    ///
    /// `input` is a path, or `-` for standard input; `output` `nil` or `-` is standard output, never refused.
    /// - Throws: ``CommandFailure/usage(_:)`` (64).
    package static func check(_ output: String?, isNot input: String) throws(CommandFailure) {
        guard let output, output != "-" else { return }
        var out = stat()
        guard stat(output, &out) == 0, out.st_mode & S_IFMT == S_IFREG else { return }
        var inputInfo = stat()
        let readsStandardInput = input == "-" || input == "/dev/stdin"
        let found = readsStandardInput ? fstat(STDIN_FILENO, &inputInfo) == 0 : stat(input, &inputInfo) == 0
        guard found, inputInfo.st_dev == out.st_dev, inputInfo.st_ino == out.st_ino else { return }
        let what = readsStandardInput ? "is the file standard input reads" : "is the input file"
        throw CommandFailure.usage("--output \(output) \(what); writing it would destroy the track before it is read: write elsewhere")
    }
}
