import Foundation
import LocationDevSupport
import LocationGPX

#if canImport(Glibc)
    import Glibc
#endif

/// The readers that the GPX benchmark runs in a child process (this same executable with
/// `--read READER FILE`), so that each one's wall time and peak RSS are its own.
package enum GPXReadChild: String, Sendable, CaseIterable {
    /// LocationGPX's `GPXReader`: libxml2 SAX2 push parser, every field mapped, times parsed.
    case locationGPX = "locationgpx"
    /// FoundationXML's `XMLParser(contentsOf:)` doing the same extraction.
    case foundationXML = "foundationxml"
    /// libxml2's SAX2 parser counting `<trkpt>` only: the floor.
    case libxml2Count = "libxml2-count"

    /// Reads `path` and prints "points timed"; returns the exit status (0, or 65 on a read error).
    package func run(path: String) -> Int32 {
        do {
            var points = 0, timed = 0
            switch self {
            case .locationGPX:
                let reader = try GPXReader(contentsOf: path)
                try reader.forEach { point in
                    points += 1
                    if point.time != nil { timed += 1 }
                }
            case .foundationXML:
                (points, timed) = try FoundationXMLReader.read(path: path)
            case .libxml2Count:
                points = try LibXML2CountReader.count(path: path)
            }
            print("\(points) \(timed)")
            return 0
        } catch {
            FileHandle.standardError.write(Data("read \(rawValue): \(error)\n".utf8))
            return 65
        }
    }

    /// Handles `--read READER FILE` as the process's arguments: runs the reader and exits. Returns when the
    /// arguments are anything else.
    package static func runIfRequested(_ arguments: [String]) {
        guard arguments.count == 4, arguments[1] == "--read" else { return }
        guard let reader = GPXReadChild(rawValue: arguments[2]) else {
            FileHandle.standardError.write(Data("unknown reader \(arguments[2])\n".utf8))
            exit(64)
        }
        exit(reader.run(path: arguments[3]))
    }

    /// The path of the running executable, which hosts the child readers.
    package static var executablePath: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? URL(fileURLWithPath: CommandLine.arguments[0]).path
    }
}
