#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Foundation
import LocationCore

/// A streaming GPX reader: points come out one at a time as the file is parsed, in constant memory.
///
/// ```swift
/// let reader = try GPXReader(contentsOf: "ride.gpx")
/// while let point = try reader.next() {
///     print(point.kind, point.latitude, point.longitude, point.time as Any)
/// }
/// ```
///
/// The reader understands GPX 1.0 and 1.1 and files with no namespace or version, in UTF-8 (with or
/// without a byte order mark), UTF-16 and ISO-8859-1, with any line endings. See <doc:ReadingGPX> for
/// what it reads from each point, how times without a zone are taken, and which input is an error.
///
/// Reading is synchronous (the file is read in 256 KiB chunks with `read(2)`); use ``points(contentsOf:)``
/// for an `AsyncSequence`. A reader is not `Sendable`: use it from one task or thread at a time.
public final class GPXReader {
    /// The file name used in errors: the path given, or the name given for in-memory input.
    public let fileName: String

    private let parser: GPXParser
    private var input: Input
    private let chunkSize: Int
    private var buffer: UnsafeMutableRawBufferPointer

    private enum Input {
        case file(Int32)
        case memory([UInt8], offset: Int)
        case done
    }

    /// Opens a GPX file for reading.
    /// - Throws: ``GPXError`` with code ``GPXError/Code/io`` when the file cannot be opened.
    public convenience init(contentsOf path: String) throws(GPXError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            throw GPXError(.io, file: path, line: nil, column: nil, "cannot open the file: \(reason)")
        }
        self.init(input: .file(fd), name: path, chunkSize: 256 * 1024)
    }

    /// Reads GPX from bytes in memory; `name` stands for the file in errors.
    public convenience init(bytes: [UInt8], name: String = "<memory>") {
        self.init(input: .memory(bytes, offset: 0), name: name, chunkSize: 256 * 1024)
    }

    /// Reads GPX from bytes in memory, handing them to the parser `chunkSize` bytes at a time (for tests and
    /// the fuzz target, which check that chunk boundaries change nothing).
    package convenience init(bytes: [UInt8], name: String, chunkSize: Int) {
        self.init(input: .memory(bytes, offset: 0), name: name, chunkSize: max(1, chunkSize))
    }

    private init(input: Input, name: String, chunkSize: Int) {
        self.fileName = name
        self.input = input
        self.chunkSize = chunkSize
        self.parser = GPXParser(fileName: name)
        if case .file = input {
            buffer = .allocate(byteCount: chunkSize, alignment: 16)
        } else {
            buffer = UnsafeMutableRawBufferPointer(start: nil, count: 0)
        }
    }

    deinit {
        if case .file(let fd) = input { close(fd) }
        buffer.deallocate()
    }

    /// The next point in file order, or `nil` at the end of the file.
    /// - Throws: ``GPXError`` naming the file, line and column of the first problem; after an error every
    ///   further call throws it again.
    public func next() throws(GPXError) -> GPXPoint? {
        while true {
            if let point = parser.takePending() { return point }
            if let error = parser.error {
                closeInput()
                throw error
            }
            if parser.finished { return nil }
            try readChunk()
        }
    }

    /// Calls `body` with every remaining point, in file order. This is the fastest way through a file.
    public func forEach(_ body: (GPXPoint) throws -> Void) throws {
        while true {
            while parser.hasPending {
                if let point = parser.takePending() { try body(point) }
            }
            if let error = parser.error {
                closeInput()
                throw error
            }
            if parser.finished { return }
            try readChunk()
        }
    }

    private func readChunk() throws(GPXError) {
        switch input {
        case .file(let fd):
            let count: Int
            switch SystemIO.read(fd, into: buffer) {
            case .success(let read): count = read
            case .failure(let failure):
                closeInput()
                throw GPXError(.io, file: fileName, line: nil, column: nil, "cannot read the file: \(failure.reason)")
            }
            if count == 0 {
                closeInput()
                parser.finish()
            } else {
                parser.feed(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            }
        case .memory(let bytes, let offset):
            let end = min(bytes.count, offset + chunkSize)
            bytes.withUnsafeBytes { all in
                parser.feed(UnsafeRawBufferPointer(rebasing: all[offset..<end]))
            }
            input = end == bytes.count ? .done : .memory(bytes, offset: end)
        case .done:
            parser.finish()
        }
    }

    private func closeInput() {
        if case .file(let fd) = input { close(fd) }
        input = .done
    }
}

extension GPXReader {
    /// Reads every point of a file (tracks, routes and waypoints, in file order).
    public static func readPoints(contentsOf path: String) throws(GPXError) -> [GPXPoint] {
        let reader = try GPXReader(contentsOf: path)
        var points: [GPXPoint] = []
        while let point = try reader.next() { points.append(point) }
        return points
    }

    /// Reads the points of one kind (or all) of a file as `Location`s.
    ///
    /// - Parameters:
    ///   - path: the file.
    ///   - kinds: which points to keep; all by default.
    ///   - timestampIfUntimed: the timestamp for points without `<time>`; when `nil` (the default), an
    ///     untimed point is an error (``GPXError/Code/missingTime``).
    public static func readLocations(
        contentsOf path: String, kinds: Set<GPXPoint.Kind> = Set(GPXPoint.Kind.allCases),
        timestampIfUntimed: Date? = nil
    ) throws(GPXError) -> [Location] {
        let reader = try GPXReader(contentsOf: path)
        var locations: [Location] = []
        while let point = try reader.next() {
            guard kinds.contains(point.kind) else { continue }
            do {
                locations.append(try point.location(timestampIfUntimed: timestampIfUntimed))
            } catch {
                var error = error
                error.file = path
                throw error
            }
        }
        return locations
    }

    /// The points of a file as an `AsyncSequence`; the file is opened when iteration begins.
    public static func points(contentsOf path: String) -> GPXPointSequence {
        GPXPointSequence(path: path)
    }
}

/// The points of a GPX file, in file order, as an `AsyncSequence` (see ``GPXReader/points(contentsOf:)``).
///
/// Each iteration opens the file anew. Parsing runs on the iterating task in 256 KiB steps.
public struct GPXPointSequence: AsyncSequence, Sendable {
    public typealias Element = GPXPoint
    public typealias Failure = GPXError

    /// The file.
    public let path: String

    /// Creates an iterator; the file is opened on the first call to `next()`.
    public func makeAsyncIterator() -> Iterator {
        Iterator(path: path)
    }

    /// Iterates the points of the file.
    public struct Iterator: AsyncIteratorProtocol {
        public typealias Element = GPXPoint
        public typealias Failure = GPXError

        let path: String
        var reader: GPXReader?
        var done = false

        init(path: String) {
            self.path = path
        }

        /// The next point, or `nil` at the end of the file.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(GPXError) -> GPXPoint? {
            try nextPoint()
        }

        /// The next point, or `nil` at the end of the file.
        public mutating func next() async throws(GPXError) -> GPXPoint? {
            try nextPoint()
        }

        private mutating func nextPoint() throws(GPXError) -> GPXPoint? {
            guard !done else { return nil }
            if reader == nil { reader = try GPXReader(contentsOf: path) }
            guard let point = try reader?.next() else {
                done = true
                reader = nil
                return nil
            }
            return point
        }
    }
}
