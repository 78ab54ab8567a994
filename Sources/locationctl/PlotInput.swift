import Foundation
import LocationControl
import LocationCore
import LocationGPX
import LocationService
import TrackPlot

#if canImport(Glibc)
    import Glibc
#endif

/// The file `locationctl plot` draws: a GPX file or `locationctl`'s JSON lines, told apart by content, read
/// as ``PlotItem``s as many times as the plotter asks, in constant memory.
///
/// Standard input (`-`), a FIFO or a shell's `<(…)` can be read only once, so it is first copied to an
/// unlinked temporary file.
final class PlotInput {
    /// What the file holds.
    enum Kind: Equatable {
        case gpx, jsonLines
    }

    /// The name used in messages.
    let name: String
    /// The name shown in the title: the file's name, or the path as given for a pipe (`/dev/fd/63`).
    let title: String
    /// What the file holds, found from its first bytes.
    let kind: Kind
    /// A path that reads the input from its start each time it is opened.
    private let path: String
    private let spool: Int32?
    /// The GPX points to draw: track points, else route points, else waypoints (chosen in the first pass).
    private var gpxKind: GPXPoint.Kind?
    /// What was left out of the drawing, one line each, said once the picture is made (a failure says only
    /// why it failed).
    private(set) var notes: [String] = []
    /// Lines of an unknown event type skipped (a newer version's), counted in the first read.
    private var skippedUnknown: Int?
    /// Whether the note about a cut-off last line was made.
    private var notedTruncated = false
    /// Whether the input is a copy of a file still being written, whose end may be cut off mid-point.
    private var mayBeCutOff = false
    /// Seconds since its last change within which a file is taken to be still written.
    private static let stillWrittenWithin = 5.0

    /// The longest JSON line accepted: a held batch is one line (about 250 bytes a fix, 100,000 fixes by
    /// default, a daemon's `batch.capacity` at most), so only a bound on memory, far above any batch.
    private static let maximumLineLength = 1 << 30

    /// Opens `argument` (`-` is standard input) and finds what it holds.
    init(_ argument: String) throws(CommandFailure) {
        name = argument == "-" ? "standard input" : argument
        let given = argument == "-" ? "/dev/stdin" : argument
        var info = stat()
        guard stat(given, &info) == 0 else {
            throw CommandFailure.missingInput("\(name): \(errno == ENOENT ? "no such file" : String(cString: strerror(errno)))")
        }
        if info.st_mode & S_IFMT == S_IFDIR { throw CommandFailure.missingInput("\(name): is a directory, not a GPX or JSON lines file") }
        if info.st_mode & S_IFMT == S_IFCHR || info.st_mode & S_IFMT == S_IFBLK {
            throw CommandFailure.missingInput("\(name): is a device, not a GPX or JSON lines file; plot reads files and pipes")
        }
        // A file written in the last few seconds may still be growing (a watch's output): it is read from a
        // copy of what it held at this moment, so that both reads see the same bytes; its last point may be cut
        // off, and is then left out.
        let recentlyWritten = Double(time(nil)) - Double(info.st_mtim.tv_sec) < Self.stillWrittenWithin
        if info.st_mode & S_IFMT == S_IFREG, !recentlyWritten || Int(info.st_size) > Self.maximumSpool {
            guard access(given, R_OK) == 0 else { throw CommandFailure.missingInput("\(name): \(String(cString: strerror(errno)))") }
            path = given
            spool = nil
            title = argument == "-" ? name : (argument.split(separator: "/").last.map(String.init) ?? argument)
        } else if info.st_mode & S_IFMT == S_IFREG {
            guard access(given, R_OK) == 0 else { throw CommandFailure.missingInput("\(name): \(String(cString: strerror(errno)))") }
            let copy = try Self.copyToTemporaryFile(given, name: name, upTo: Int(info.st_size))
            spool = copy
            path = "/proc/self/fd/\(copy)"
            title = argument == "-" ? name : (argument.split(separator: "/").last.map(String.init) ?? argument)
            mayBeCutOff = true
        } else {
            let copy = try Self.copyToTemporaryFile(given, name: name)
            spool = copy
            path = "/proc/self/fd/\(copy)"
            title = name
        }
        kind = try Self.detect(path, name: name)
    }

    deinit {
        if let spool { close(spool) }
    }

    /// Calls `visit` with every item of the file, in order.
    func read(_ visit: (PlotItem) throws -> Void) throws {
        switch kind {
        case .gpx: try readGPX(visit)
        case .jsonLines: try readJSONLines(visit)
        }
    }

    // MARK: GPX

    private func readGPX(_ visit: (PlotItem) throws -> Void) throws {
        let reader: GPXReader
        do { reader = try GPXReader(contentsOf: path) } catch { throw CommandFailure.missingInput(messageNamingInput(error.description)) }
        var counts: [GPXPoint.Kind: Int] = [:]
        // Track points are drawn when there are any; the first read finds out, drawing them as it goes.
        let chosen = gpxKind ?? .trackPoint
        do {
            try reader.forEach { point in
                counts[point.kind, default: 0] += 1
                guard point.kind == chosen else { return }
                let item = PlotPoint(
                    latitude: point.latitude, longitude: point.longitude, time: point.time?.timeIntervalSince1970,
                    horizontalAccuracy: point.horizontalAccuracy)
                guard item.isOnGlobe else {
                    throw CommandFailure.badData("\(name) line \(point.line): \(point.latitude), \(point.longitude) is not a position on the globe")
                }
                try visit(.point(item))
            }
        } catch let error as GPXError {
            // A file still being written, copied as it was, may end inside its last point: drawn up to there.
            guard mayBeCutOff, error.code == .truncated, counts.values.reduce(0, +) > 0 else {
                throw CommandFailure.badData(messageNamingInput(error.description))
            }
            if !notedTruncated {
                notes.append("\(name) ends inside a point (it is still being written): drawn up to its last whole point")
                notedTruncated = true
            }
        }
        if gpxKind == nil {
            // Without track points, route points, else waypoints: read again for them (nothing was drawn).
            gpxKind = [.trackPoint, .routePoint, .waypoint].first { counts[$0, default: 0] > 0 }
            if let kind = gpxKind, kind != .trackPoint { try readGPX(visit) }
        }
    }

    // MARK: JSON lines

    private func readJSONLines(_ visit: (PlotItem) throws -> Void) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CommandFailure.missingInput("\(name): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var chunk = [UInt8](repeating: 0, count: 1 << 18)
        var line: [UInt8] = []
        var number = 0
        var skipped = 0
        while true {
            let count: Int
            switch chunk.withUnsafeMutableBytes({ SystemIO.read(fd, into: $0) }) {
            case .success(let read): count = read
            case .failure(let failure): throw CommandFailure.badData("\(name): cannot read: \(failure.reason)")
            }
            if count == 0 { break }
            var start = 0
            for index in 0..<count where chunk[index] == 0x0A {
                line.append(contentsOf: chunk[start..<index])
                number += 1
                try decode(line, number: number, isLast: false, skipped: &skipped, visit)
                line.removeAll(keepingCapacity: true)
                start = index + 1
            }
            line.append(contentsOf: chunk[start..<count])
            guard line.count <= Self.maximumLineLength else {
                throw CommandFailure.badData("\(name) line \(number + 1): longer than \(Self.maximumLineLength) bytes; not locationctl's JSON lines")
            }
        }
        if !line.isEmpty { try decode(line, number: number + 1, isLast: true, skipped: &skipped, visit) }
        if skippedUnknown == nil {
            skippedUnknown = skipped
            if skipped > 0 { notes.append("\(name): skipped \(skipped) line\(skipped == 1 ? "" : "s") of an event type this version does not know") }
        }
    }

    /// Decodes one line with the service's decoder, as `watch` reads the daemon, and turns it into an item.
    private func decode(_ line: [UInt8], number: Int, isLast: Bool, skipped: inout Int, _ visit: (PlotItem) throws -> Void) throws {
        guard line.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) else { return }
        let frame: EventFrame?
        do throws(LocationError) { frame = try LocationEventDecoder.frameIfKnown(line) } catch {
            // A watch cut off mid-line (Ctrl-C, kill) leaves a partial last line: drawn without it. A last
            // line that is whole JSON but no event is bad data like any other.
            if isLast, (try? JSONSerialization.jsonObject(with: Data(line))) == nil {
                if !notedTruncated {
                    notedTruncated = true
                    notes.append("\(name) line \(number): the last line is incomplete and is left out")
                }
                return
            }
            throw CommandFailure.badData("\(name) line \(number): \(error.message)")
        }
        guard let frame else {
            // An earlier version's batch line carries no locations: its `count` location lines follow it.
            if let count = Self.earlierBatchCount(line) {
                if count > 0 { try visit(.batch(count: count)) }
                return
            }
            skipped += 1
            return
        }
        switch frame.event {
        case .locations(let locations, let delivery):
            if case .held = delivery { try visit(.batch(count: locations.count)) }
            for location in locations {
                guard location.hasValidCoordinate else {
                    throw CommandFailure.badData("\(name) line \(number): \(location.latitude), \(location.longitude) is not a position on the globe")
                }
                try visit(.point(PlotPoint(location)))
            }
        case .lifecycle(let message):
            switch message.resultingState {
            case .active, .inactive: try visit(.phase(.foreground))
            case .background: try visit(.phase(.background))
            case .suspended: try visit(.phase(.suspended))
            case .notRunning: break
            }
        case .error(let error):
            // Only errors that mean no position is coming break the line; a recovery, an overflow or a
            // journal problem does not.
            switch error.code {
            case .noFix, .fixLost, .sourceUnavailable, .sourceFailed: try visit(.fixLoss(reason: error.message))
            default: break
            }
        case .sourceStatus(let status):
            if status == .noFix || status == .unavailable { try visit(.fixLoss(reason: status.rawValue)) }
        case .satellitesInView:
            // Said only while there is no fix, which the source line before it already broke the line for.
            break
        case .applicationStopped, .accuracyPolicy, .droppedHeldLocations, .region, .motion:
            break
        }
    }

    /// The `count` of a batch line without fixes (an earlier version's, whose fixes follow it as lines).
    private static func earlierBatchCount(_ line: [UInt8]) -> Int? {
        guard let header = (try? JSONSerialization.jsonObject(with: Data(line))) as? [String: Any],
            header["type"] as? String == "batch", let count = header["count"] as? Int, count >= 0
        else { return nil }
        return count
    }

    // MARK: Opening

    private func messageNamingInput(_ message: String) -> String {
        path == name ? message : message.replacingOccurrences(of: path, with: name)
    }

    /// Finds the kind from the first bytes: `<` (after a byte order mark and white space) is GPX, `{` is
    /// JSON lines; a UTF-16 byte order mark is GPX (JSON lines are UTF-8).
    private static func detect(_ path: String, name: String) throws(CommandFailure) -> Kind {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CommandFailure.missingInput("\(name): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var head = [UInt8](repeating: 0, count: 4096)
        let count: Int
        switch head.withUnsafeMutableBytes({ SystemIO.read(fd, into: $0) }) {
        case .success(let read): count = read
        case .failure(let failure): throw CommandFailure.missingInput("\(name): cannot read: \(failure.reason)")
        }
        return try classify(head[0..<count], name: name, atEnd: true)!
    }

    /// What a file starting with `bytes` holds; `nil` when they are only white space and more may follow
    /// (`atEnd` false). Refuses anything else at once, from its first bytes.
    private static func classify(_ bytes: ArraySlice<UInt8>, name: String, atEnd: Bool) throws(CommandFailure) -> Kind? {
        if bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE]) { return .gpx }
        let text = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? bytes.dropFirst(3) : bytes
        switch text.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) {
        case UInt8(ascii: "<"): return .gpx
        case UInt8(ascii: "{"): return .jsonLines
        case nil:
            guard atEnd else { return nil }
            throw CommandFailure.badData("\(name) is empty: nothing to plot")
        default:
            throw CommandFailure.badData("\(name) is neither GPX nor locationctl's JSON lines (it does not start with < or {)")
        }
    }

    /// The most a once-only input is copied: far above a long track (a million GPX points are about 150 MB),
    /// and a bound on what an endless pipe can put in the temporary directory.
    static let maximumSpool = 1 << 30

    /// Copies a once-only input into an unlinked temporary file and returns its descriptor.
    private static func copyToTemporaryFile(_ path: String, name: String, upTo limit: Int? = nil) throws(CommandFailure) -> Int32 {
        let input = open(path, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw CommandFailure.missingInput("\(name): \(String(cString: strerror(errno)))") }
        defer { close(input) }
        let directory = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(directory)/locationctl-plot-XXXXXX".utf8CString)
        let copy = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard copy >= 0 else {
            throw CommandFailure.cannotCreate("cannot keep a copy of \(name) in \(directory): \(String(cString: strerror(errno)))")
        }
        // Unlinked at once: nothing is left behind, whatever ends the process.
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        // The first bytes decide whether it is a track at all, before much is copied.
        var decided = false
        var total = 0
        while true {
            let wanted = limit.map { min(buffer.count, $0 - total) } ?? buffer.count
            if wanted <= 0 { break }
            let count: Int
            switch buffer.withUnsafeMutableBytes({ SystemIO.read(input, into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<wanted])) }) {
            case .success(let read): count = read
            case .failure(let failure):
                close(copy)
                throw CommandFailure.missingInput("\(name): cannot read: \(failure.reason)")
            }
            if count == 0 { break }
            if !decided {
                do throws(CommandFailure) {
                    decided = try classify(buffer[0..<count], name: name, atEnd: false) != nil
                } catch {
                    close(copy)
                    throw error
                }
            }
            total += count
            guard total <= maximumSpool else {
                close(copy)
                throw CommandFailure.badData(
                    "\(name) goes on past \(maximumSpool >> 30) GiB, more than plot copies from a pipe; plot a file instead (it is read in place, whatever its size)")
            }
            if case .failure(let failure) = buffer.withUnsafeBytes({ SystemIO.writeAll(copy, UnsafeRawBufferPointer(rebasing: $0[0..<count])) }) {
                close(copy)
                throw CommandFailure.ioError("cannot keep a copy of \(name) in \(directory): \(failure.reason)")
            }
        }
        return copy
    }
}
