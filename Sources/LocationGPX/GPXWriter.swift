#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Foundation
import LocationCore

/// Writes `Location`s as a GPX 1.1 track, streaming: memory use does not grow with the number of points.
///
/// ```swift
/// let writer = try GPXWriter(path: "ride.gpx")
/// for location in locations { try writer.write(location) }
/// try writer.finish()
/// ```
///
/// Each location becomes a `<trkpt>`; the first ``write(_:)`` opens a `<trk>` and a `<trkseg>` when none is
/// open; ``beginTrack(name:)`` and ``beginSegment()`` start new ones. The output is valid against the
/// GPX 1.1 schema and reads back through ``GPXReader`` as exactly the same locations (see
/// <doc:LocationExtension> for how each property is written, and the two exceptions).
///
/// Call ``finish()`` to close the document and learn about write errors; a writer that is dropped
/// without it still closes the document, but cannot report failures.
public final class GPXWriter {
    private enum Output {
        case file(Int32, path: String)
        case sink(([UInt8]) throws -> Void)
    }

    private var output: Output?
    private var buffer: [UInt8] = []
    private var inTrack = false
    private var inSegment = false
    private var failed: GPXError?
    private let flushThreshold = 1 << 16
    /// A continuation of a document whose root does not declare the extension namespace (another
    /// program's) declares it on each track.
    private var declaresNamespaceOnTracks = false

    /// Creates (0600) or truncates a GPX file, opening the path itself, and writes the document header.
    /// - Parameters:
    ///   - path: the file to write.
    ///   - creator: the `creator` attribute, naming the program that wrote the file.
    ///   - metadataTime: written as `<metadata><time>` when given.
    public convenience init(path: String, creator: String = "swift-location", metadataTime: Date? = nil)
        throws(GPXError)
    {
        // The path itself (a new file 0600: a location history is personal data; an existing one keeps its
        // mode, owner and links).
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0o600)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            throw GPXError(.io, file: path, line: nil, column: nil, "cannot create the file: \(reason)")
        }
        try self.init(output: .file(fd, path: path), creator: creator, metadataTime: metadataTime)
    }

    /// Creates a writer that hands its output, in pieces of about 64 KiB, to `sink`.
    public convenience init(
        creator: String = "swift-location", metadataTime: Date? = nil, sink: @escaping ([UInt8]) throws -> Void
    ) throws(GPXError) {
        try self.init(output: .sink(sink), creator: creator, metadataTime: metadataTime)
    }

    /// Creates a writer that continues a document whose header (and earlier tracks) are already written,
    /// handing its output to `sink`: its first point opens a new track, and ``closingTags`` and
    /// ``finish()`` close that track and the document. For appending to a GPX file whose `</gpx>` the
    /// caller has cut off.
    ///
    /// A factory, not an initializer: an initializer whose one argument is a closure would be chosen for
    /// every `GPXWriter { … }` written with a trailing closure.
    ///
    /// With `declaresExtensionNamespace`, each track declares the namespace of the location extension
    /// itself, for a document (another program's) whose root does not.
    package static func continuingDocument(declaresExtensionNamespace: Bool = false, sink: @escaping ([UInt8]) throws -> Void) -> GPXWriter {
        // Only a document's header can throw (its time); a continuation writes none.
        let writer = try! GPXWriter(output: .sink(sink), creator: nil, metadataTime: nil)
        writer.declaresNamespaceOnTracks = declaresExtensionNamespace
        return writer
    }

    private init(output: Output, creator: String?, metadataTime: Date?) throws(GPXError) {
        self.output = output
        buffer.reserveCapacity(flushThreshold + 1024)
        guard let creator else { return }
        append("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<gpx version=\"1.1\" creator=\"")
        appendEscaped(creator)
        append(
            "\" xmlns=\"\(GPXNamespace.gpx11)\" xmlns:\(GPXNamespace.locationPrefix)=\"\(GPXNamespace.location)\""
                + " xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\""
                + " xsi:schemaLocation=\"\(GPXNamespace.gpx11) http://www.topografix.com/GPX/1/1/gpx.xsd\">\n")
        if let metadataTime {
            try checkTime(metadataTime)
            append("  <metadata>\n    <time>")
            RFC3339.append(metadataTime, to: &buffer)
            append("</time>\n  </metadata>\n")
        }
    }

    deinit {
        if output != nil { try? finish() }
    }

    /// Closes any open track and starts a new `<trk>`.
    public func beginTrack(name: String? = nil) throws(GPXError) {
        try checkOpen()
        closeTrack()
        append(declaresNamespaceOnTracks ? "  <trk xmlns:\(GPXNamespace.locationPrefix)=\"\(GPXNamespace.location)\">\n" : "  <trk>\n")
        if let name {
            append("    <name>")
            appendEscaped(name)
            append("</name>\n")
        }
        inTrack = true
    }

    /// Closes the open segment (if any) and starts a new `<trkseg>` in the current track (opening a
    /// track first if none is open).
    public func beginSegment() throws(GPXError) {
        try checkOpen()
        if !inTrack { try beginTrack() }
        if inSegment { append("    </trkseg>\n") }
        append("    <trkseg>\n")
        inSegment = true
    }

    /// Writes one location as a `<trkpt>`.
    /// - Throws: ``GPXError/Code/invalidLocation`` when the coordinate is not finite or outside
    ///   [-90, 90] × [-180, 180], or the timestamp lies outside the years 1–9999 (nothing is written);
    ///   ``GPXError/Code/io`` when the output fails.
    public func write(_ location: Location) throws(GPXError) {
        try checkOpen()
        guard location.hasValidCoordinate else {
            throw GPXError(
                .invalidLocation, file: path, line: nil, column: nil,
                "coordinate (\(location.latitude), \(location.longitude)) is outside [-90, 90] × [-180, 180]")
        }
        try checkTime(location.timestamp)
        if !inSegment { try beginSegment() }

        append("      <trkpt lat=\"")
        GPXNumber.appendDecimal(location.latitude, to: &buffer)
        append("\" lon=\"")
        // GPX 1.1 allows longitudes in [-180, 180): the antimeridian is written as -180.
        GPXNumber.appendDecimal(location.longitude == 180 ? -180 : location.longitude, to: &buffer)
        append("\">\n")
        if let altitude = location.altitude, altitude.isFinite { element("ele", altitude) }
        append("        <time>")
        RFC3339.append(location.timestamp, to: &buffer)
        append("</time>\n")
        if let source = location.source {
            append("        <src>")
            appendEscaped(source)
            append("</src>\n")
        }
        // <fix> holds one of none, 2d, 3d, dgps, pps: a differential or P(Y) fix is written as such (RTK is
        // differential too), else the dimension. What <fix> cannot say goes into loc: (see LocationExtension).
        let fix = GPXPoint.Fix(location)
        if let fix { append("        <fix>\(fix.rawValue)</fix>\n") }
        if let satellites = location.satellitesUsed, satellites >= 0 {
            append("        <sat>")
            GPXNumber.appendInt(satellites, to: &buffer)
            append("</sat>\n")
        }
        // GPX 1.1 orders the dilutions right after <sat>.
        if let hdop = location.hdop { element("hdop", hdop) }
        if let vdop = location.vdop { element("vdop", vdop) }
        if let pdop = location.pdop { element("pdop", pdop) }
        let extensions: [(String, Double?)] = [
            ("speed", location.speed), ("course", location.course),
            ("horizontalAccuracy", location.horizontalAccuracy), ("verticalAccuracy", location.verticalAccuracy),
            ("speedAccuracy", location.speedAccuracy), ("courseAccuracy", location.courseAccuracy),
            ("climb", location.climb), ("ellipsoidalAltitude", location.ellipsoidalAltitude),
        ]
        let present = extensions.filter { $0.1?.isFinite == true }
        // Only what <fix> did not already say exactly.
        let correction = location.correctionStatus.flatMap { $0 == fix?.correction ? nil : $0 }
        let mode = fix == .dgps || fix == .pps ? location.fixMode : nil
        let visible = location.satellitesVisible.flatMap { $0 >= 0 ? $0 : nil }
        if !present.isEmpty || location.isSimulated || correction != nil || mode != nil || visible != nil {
            append("        <extensions>\n")
            for (name, value) in present {
                append("          <\(GPXNamespace.locationPrefix):\(name)>")
                GPXNumber.appendDecimal(value!, to: &buffer)
                append("</\(GPXNamespace.locationPrefix):\(name)>\n")
            }
            if let mode {
                append("          <\(GPXNamespace.locationPrefix):fixMode>\(mode.rawValue)</\(GPXNamespace.locationPrefix):fixMode>\n")
            }
            if let correction {
                append("          <\(GPXNamespace.locationPrefix):correctionStatus>\(correction.rawValue)</\(GPXNamespace.locationPrefix):correctionStatus>\n")
            }
            if let visible {
                append("          <\(GPXNamespace.locationPrefix):satellitesVisible>")
                GPXNumber.appendInt(visible, to: &buffer)
                append("</\(GPXNamespace.locationPrefix):satellitesVisible>\n")
            }
            if location.isSimulated {
                append("          <\(GPXNamespace.locationPrefix):simulated>true</\(GPXNamespace.locationPrefix):simulated>\n")
            }
            append("        </extensions>\n")
        }
        append("      </trkpt>\n")
        if buffer.count >= flushThreshold { try flush() }
    }

    /// Writes several locations in order.
    public func write(contentsOf locations: some Sequence<Location>) throws(GPXError) {
        for location in locations { try write(location) }
    }

    /// Closes the open segment, track and document, writes everything out and closes the file.
    /// Calling it again does nothing.
    public func finish() throws(GPXError) {
        if let failed { throw failed }
        guard output != nil else { return }
        closeTrack()
        append("</gpx>\n")
        try flush()
        if case .file(let fd, let path) = output {
            output = nil
            if close(fd) != 0 {
                let reason = String(cString: strerror(errno))
                throw GPXError(.io, file: path, line: nil, column: nil, "cannot close the file: \(reason)")
            }
        }
        output = nil
    }

    /// The whole GPX document for some locations, as bytes.
    public static func document(
        for locations: some Sequence<Location>, creator: String = "swift-location", trackName: String? = nil
    ) throws(GPXError) -> [UInt8] {
        var bytes: [UInt8] = []
        let writer = try GPXWriter(creator: creator) { bytes.append(contentsOf: $0) }
        if let trackName { try writer.beginTrack(name: trackName) }
        try writer.write(contentsOf: locations)
        try writer.finish()
        return bytes
    }

    // MARK: - Internals

    private var path: String? {
        if case .file(_, let path) = output { return path }
        return nil
    }

    private func checkOpen() throws(GPXError) {
        if let failed { throw failed }
        guard output != nil else {
            throw GPXError(.writerClosed, file: nil, line: nil, column: nil, "the writer was already finished")
        }
    }

    private func checkTime(_ date: Date) throws(GPXError) {
        // Years 0001 to 9999: what xsd:dateTime's four-digit form and RFC 3339 can hold.
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite, seconds >= -62_135_596_800, seconds < 253_402_300_800 else {
            throw GPXError(
                .invalidLocation, file: path, line: nil, column: nil,
                "timestamp \(seconds.isFinite ? RFC3339.string(from: date) : String(seconds)) lies outside the years "
                    + "0001–9999 that GPX can hold")
        }
    }

    /// How many bytes are written but not handed to the output yet.
    package var bufferedByteCount: Int { buffer.count }

    /// The bytes ``finish()`` would write now to close the document: the open segment and track, and
    /// `</gpx>`. A writer that keeps a file valid between points writes them after each flush and
    /// overwrites them with the next points.
    public var closingTags: [UInt8] {
        Array(((inSegment ? "    </trkseg>\n" : "") + (inTrack ? "  </trk>\n" : "") + "</gpx>\n").utf8)
    }

    private func closeTrack() {
        if inSegment { append("    </trkseg>\n") }
        if inTrack { append("  </trk>\n") }
        inSegment = false
        inTrack = false
    }

    private func element(_ name: String, _ value: Double) {
        append("        <\(name)>")
        GPXNumber.appendDecimal(value, to: &buffer)
        append("</\(name)>\n")
    }

    private func append(_ text: String) {
        buffer.append(contentsOf: text.utf8)
    }

    /// Appends text as XML character data. Characters XML 1.0 cannot carry (C0 controls other than tab
    /// and line feed, U+FFFE, U+FFFF) become U+FFFD; a carriage return is written as `&#13;` so that it
    /// survives line-end normalisation.
    private func appendEscaped(_ text: String) {
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": append("&amp;")
            case "<": append("&lt;")
            case ">": append("&gt;")
            case "\"": append("&quot;")
            case "\r": append("&#13;")
            case "\t", "\n": buffer.append(UInt8(scalar.value))
            case _ where scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF:
                buffer.append(contentsOf: [0xEF, 0xBF, 0xBD])
            default:
                buffer.append(contentsOf: String(scalar).utf8)
            }
        }
    }

    /// Writes out what is buffered, so that the output holds every point written so far (as a document
    /// that ``finish()`` has not closed yet).
    public func flush() throws(GPXError) {
        guard !buffer.isEmpty, let output else { return }
        do throws(GPXError) {
            switch output {
            case .file(let fd, let path):
                if case .failure(let failure) = SystemIO.writeAll(fd, buffer) {
                    throw GPXError(.io, file: path, line: nil, column: nil, "cannot write the file: \(failure.reason)")
                }
            case .sink(let sink):
                do {
                    try sink(buffer)
                } catch {
                    throw GPXError(.io, file: nil, line: nil, column: nil, "the output failed: \(error)")
                }
            }
            buffer.removeAll(keepingCapacity: true)
        } catch {
            failed = error
            if case .file(let fd, _) = output { close(fd) }
            self.output = nil
            throw error
        }
    }
}
