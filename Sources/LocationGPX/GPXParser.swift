import CLibXML2
import Foundation
import LocationCore

/// The libxml2 SAX2 push parser behind ``GPXReader``: bytes go in through ``feed(_:)`` and ``finish()``,
/// finished points come out in ``pending``.
///
/// Security: the context is created without `XML_PARSE_NOENT`, `XML_PARSE_DTDLOAD`, `XML_PARSE_DTDVALID`
/// and `XML_PARSE_HUGE`, and with `XML_PARSE_NONET`, so external entities and DTDs are never fetched
/// (from disk or network) and libxml2's entity-loop limits stay on. Internal entities declared in the
/// document are expanded; on top of libxml2's own limits, the parser stops when the text and elements
/// delivered exceed what the input could hold without entities by a wide margin (an XML bomb).
final class GPXParser {
    let fileName: String
    /// Points parsed and not yet taken, oldest first, starting at ``pendingHead``.
    var pending: [GPXPoint] = []
    var pendingHead = 0
    /// The first error; once set, the parser stops.
    private(set) var error: GPXError?
    /// `error != nil`, cheap to test in the callbacks (testing the optional struct copies it).
    private var failed = false
    /// An error was recorded where the parser could not be stopped at once (see ``fail(_:line:column:_:stopsParser:)``).
    private var stopPending = false
    private(set) var finished = false

    private var context: xmlParserCtxtPtr?

    // Structure.
    private var stack: [Element] = []  // the open elements, root first
    private var rootSeen = false
    private var trackCount = 0
    private var routeCount = 0
    private var segmentCount = 0  // segments seen in the current track
    private var pointCount = 0  // points in the current segment or route
    private var waypointCount = 0
    private var pointDepth = 0  // depth of the open point element, 0 when none
    private var current = GPXPoint(latitude: 0, longitude: 0)

    // Text of the field being captured.
    private var field: Field = .none
    private var fieldDepth = 0
    private var text: UnsafeMutablePointer<UInt8>
    private var textCount = 0
    private var textCapacity = 256
    private static let maxTextLength = 1 << 16
    private static let byteOrderMarks: [[UInt8]] = [[0xEF, 0xBB, 0xBF], [0xFF, 0xFE], [0xFE, 0xFF]]
    private static let maxDepth = 256

    // Input bookkeeping.
    private var head: [UInt8] = []  // the first bytes, until there are enough to detect the encoding
    private var sawContent = false  // a byte other than XML whitespace was fed
    private var atEnd = false  // in the final xmlParseChunk call

    // Entity-expansion guard: work done by the callbacks versus input bytes fed.
    private var fedBytes = 0
    private var delivered = 0

    // Namespace URI classification, cached by pointer (libxml2 interns URIs in the context's dictionary).
    private var lastURI: UnsafePointer<xmlChar>?
    private var lastNamespace: Namespace = .other

    init(fileName: String) {
        self.fileName = fileName
        text = .allocate(capacity: textCapacity)
        stack.reserveCapacity(16)
        pending.reserveCapacity(256)
    }

    deinit {
        text.deallocate()
        if let context {
            if let document = context.pointee.myDoc { xmlFreeDoc(document) }
            xmlFreeParserCtxt(context)
        }
    }

    /// Whether points are waiting in ``pending``.
    var hasPending: Bool { pendingHead < pending.count }

    /// Takes the oldest pending point.
    func takePending() -> GPXPoint? {
        guard pendingHead < pending.count else { return nil }
        let point = pending[pendingHead]
        pendingHead += 1
        if pendingHead == pending.count {
            pending.removeAll(keepingCapacity: true)
            pendingHead = 0
        }
        return point
    }

    /// Parses the next bytes of the document.
    func feed(_ bytes: UnsafeRawBufferPointer) {
        guard error == nil, !finished, !bytes.isEmpty else { return }
        fedBytes += bytes.count
        if !sawContent {
            sawContent = bytes.contains { !GPXNumber.isSpace($0) }
        }
        var chunk = bytes
        if context == nil {
            // libxml2 detects the encoding (BOM, UTF-16, declaration) from the first four bytes.
            if head.count + chunk.count < 4 {
                head.append(contentsOf: chunk)
                return
            }
            let needed = 4 - head.count
            head.append(contentsOf: chunk.prefix(needed))
            chunk = UnsafeRawBufferPointer(rebasing: chunk.dropFirst(needed))
            guard createContext() else { return }
        }
        parse(chunk, terminate: false)
    }

    /// Ends the input. Errors libxml2 raises now are caused by the end of the file: the document is
    /// truncated (or empty).
    func finish() {
        guard error == nil, !finished else { return }
        defer { finished = true }
        guard sawContent else {
            fail(.empty, line: nil, column: nil, fedBytes == 0 ? "the file is empty" : "the file holds only whitespace")
            return
        }
        // Under four bytes in all, starting with a byte order mark: nothing after it, or a cut character.
        if context == nil, let bom = Self.byteOrderMarks.first(where: { head.starts(with: $0) }) {
            if head.count == bom.count {
                fail(.empty, line: nil, column: nil, "the file holds only a byte order mark")
            } else {
                fail(.truncated, line: 1, column: 1, "the file ends before its root element (truncated?)")
            }
            return
        }
        if context == nil {
            guard createContext() else { return }
        }
        atEnd = true
        parse(UnsafeRawBufferPointer(start: nil, count: 0), terminate: true)
        guard error == nil else { return }
        if let undecodable = undecodableInput() {
            fail(.malformedXML, undecodable)
        } else if !rootSeen {
            fail(.malformedXML, "the file holds no XML element")
        } else if !stack.isEmpty {
            fail(.truncated, "the file ends inside <\(openElementName)> (truncated?)")
        }
    }

    /// When libxml2 stopped decoding before the end of the input, what to say about it. libxml2 2.9's own
    /// decoders (US-ASCII, for one) stop at a byte they cannot decode without reporting it, keep the rest
    /// undecoded, and then report the end of the input: the file is not truncated, it cannot be decoded.
    /// Fewer than 4 bytes left are the start of a character cut off by the end of the file (truncated).
    private func undecodableInput() -> String? {
        guard let raw = context?.pointee.input?.pointee.buf?.pointee.raw, xmlBufUse(raw) >= 4,
            let bytes = xmlBufContent(raw)
        else { return nil }
        let shown = (0..<4).map { "0x" + String(bytes[$0], radix: 16, uppercase: true).leftPadded(to: 2) }
        let encoding = context?.pointee.encoding.map { " as \(String(cString: $0))" } ?? ""
        return "the file cannot be decoded\(encoding) from here: bytes \(shown.joined(separator: " "))"
    }

    private func parse(_ chunk: UnsafeRawBufferPointer, terminate: Bool) {
        guard let context else { return }
        routingGlobalErrors { parse(context, chunk, terminate: terminate) }
    }

    private func parse(_ context: xmlParserCtxtPtr, _ chunk: UnsafeRawBufferPointer, terminate: Bool) {
        var offset = 0
        repeat {
            // xmlParseChunk takes an Int32 size; feed large buffers in pieces.
            let size = min(chunk.count - offset, 1 << 30)
            let last = terminate && offset + size == chunk.count
            let base = chunk.baseAddress.map { $0.advanced(by: offset).assumingMemoryBound(to: CChar.self) }
            _ = xmlParseChunk(context, base, Int32(size), last ? 1 : 0)
            offset += size
            if failed { return }
        } while offset < chunk.count
    }

    private func createContext() -> Bool {
        context = routingGlobalErrors { head.withUnsafeBytes { makeContext($0) } }
        if failed { return false }
        if context == nil { fail(.io, line: nil, column: nil, "libxml2 could not create a parser") }
        return context != nil
    }

    /// Whether libxml2 has consumed all the input it was given.
    private var inputExhausted: Bool {
        guard let input = context?.pointee.input else { return false }
        return input.pointee.cur == input.pointee.end
    }

    /// The name of the innermost open element, as libxml2 tracks it.
    private var openElementName: String {
        context?.pointee.name.map { String(cString: $0) } ?? "gpx"
    }

    private func makeContext(_ head: UnsafeRawBufferPointer) -> xmlParserCtxtPtr? {
        var sax = xmlSAXHandler()
        sax.initialized = XML_SAX2_MAGIC
        // The hot callbacks borrow `self` without retaining it (the reader keeps it alive while it parses):
        // retain/release pairs here cost more than everything else the callbacks do.
        sax.startElementNs = { user, localname, prefix, uri, _, _, attributeCount, _, attributes in
            Unmanaged<GPXParser>.fromOpaque(user!)._withUnsafeGuaranteedRef {
                $0.startElement(localname, prefix, uri, Int(attributeCount), attributes)
            }
        }
        sax.endElementNs = { user, _, _, _ in
            Unmanaged<GPXParser>.fromOpaque(user!)._withUnsafeGuaranteedRef { $0.endElement() }
        }
        sax.characters = { user, bytes, count in
            Unmanaged<GPXParser>.fromOpaque(user!)._withUnsafeGuaranteedRef { $0.characters(bytes, Int(count)) }
        }
        sax.cdataBlock = sax.characters
        sax.serror = { user, error in
            guard let user, let error else { return }
            GPXParser.from(user).libxmlError(error.pointee)
        }
        // Internal DTD subsets and their entities, kept by libxml2's own SAX2 handlers. Those take the
        // parser context where our callbacks get `self`, hence the forwarding. No externalSubset handler:
        // external DTDs are never loaded.
        sax.startDocument = { user in
            xmlSAX2StartDocument(GPXParser.from(user).contextPointer)
        }
        sax.internalSubset = { user, name, externalID, systemID in
            xmlSAX2InternalSubset(GPXParser.from(user).contextPointer, name, externalID, systemID)
        }
        sax.entityDecl = { user, name, type, publicID, systemID, content in
            xmlSAX2EntityDecl(GPXParser.from(user).contextPointer, name, type, publicID, systemID, content)
        }
        sax.getEntity = { user, name in
            xmlSAX2GetEntity(GPXParser.from(user).contextPointer, name)
        }
        sax.getParameterEntity = { user, name in
            xmlSAX2GetParameterEntity(GPXParser.from(user).contextPointer, name)
        }
        sax.resolveEntity = { _, _, _ in nil }

        let user = Unmanaged.passUnretained(self).toOpaque()
        let created = fileName.withCString { name in
            xmlCreatePushParserCtxt(
                &sax, user, head.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(head.count), name)
        }
        guard let created else { return nil }
        // Only NONET: no NOENT (entities are not substituted by libxml2), no DTDLOAD/DTDVALID (no external
        // DTD), no HUGE (libxml2's size and entity limits stay on).
        xmlCtxtUseOptions(created, Int32(XML_PARSE_NONET.rawValue))
        return created
    }

    /// The parser context as libxml2's own SAX2 handlers expect it.
    private var contextPointer: UnsafeMutableRawPointer? { context.map { UnsafeMutableRawPointer($0) } }

    @inline(__always) private static func from(_ user: UnsafeMutableRawPointer?) -> GPXParser {
        Unmanaged<GPXParser>.fromOpaque(user!).takeUnretainedValue()
    }

    // MARK: - Positions and errors

    private var line: Int { context.map { Int(xmlSAX2GetLineNumber(UnsafeMutableRawPointer($0))) } ?? 0 }
    private var column: Int { context.map { Int(xmlSAX2GetColumnNumber(UnsafeMutableRawPointer($0))) } ?? 0 }

    /// Records the first error and stops the parser. Inside a libxml2 error report (`stopsParser: false`)
    /// stopping is not safe, since it frees buffers the reporting code still uses: the next SAX callback
    /// stops it instead, and until then libxml2 itself has disabled the callbacks or they return at once.
    private func fail(_ code: GPXError.Code, line: Int?, column: Int?, _ message: String, stopsParser: Bool = true) {
        guard !failed else { return }
        failed = true
        error = GPXError(code, file: fileName, line: line, column: column, message)
        if stopsParser, let context {
            xmlStopParser(context)
        } else {
            stopPending = true
        }
    }

    /// Stops the parser after an error recorded inside a libxml2 error report; called from SAX callbacks.
    private func stopIfPending() {
        guard stopPending, let context else { return }
        stopPending = false
        xmlStopParser(context)
    }

    private func fail(_ code: GPXError.Code, _ message: String) {
        fail(code, line: line, column: column, message)
    }

    /// Runs `body` with libxml2's errors that have no parser context (bytes the declared encoding cannot
    /// decode, failed conversions) coming to ``globalError(_:)``. libxml2 sends those to a per-thread
    /// handler that prints them on standard error by default; the thread's handler is restored afterwards,
    /// so other users of libxml2 in the process are not affected.
    private func routingGlobalErrors<Result>(_ body: () -> Result) -> Result {
        let savedHandler = __xmlStructuredError().pointee
        let savedContext = __xmlStructuredErrorContext().pointee
        xmlSetStructuredErrorFunc(Unmanaged.passUnretained(self).toOpaque()) { user, error in
            guard let user, let error else { return }
            GPXParser.from(user).globalError(error.pointee)
        }
        defer { xmlSetStructuredErrorFunc(savedContext, savedHandler) }
        return body()
    }

    /// An encoding or I/O error from inside libxml2. libxml2 may carry on after one (with input it could
    /// not decode) or stop without another word, depending on where the input was cut into chunks; either
    /// way the document cannot be read as written, so it is an error here, at the place parsing had
    /// reached (the undecodable bytes are at or after it: libxml2 decodes ahead of parsing).
    private func globalError(_ raised: xmlError) {
        guard raised.level == XML_ERR_ERROR || raised.level == XML_ERR_FATAL, !failed else { return }
        var message = raised.message.map { String(cString: $0) } ?? "libxml2 error \(raised.code)"
        while let last = message.last, last.isWhitespace { message.removeLast() }
        let encoding = context?.pointee.encoding.map { " as \(String(cString: $0))" } ?? ""
        fail(
            .malformedXML, line: context == nil ? nil : line, column: context == nil ? nil : column,
            "the file cannot be decoded\(encoding) at or after this point: \(message)", stopsParser: false)
    }

    private func libxmlError(_ raised: xmlError) {
        guard raised.level == XML_ERR_FATAL, !failed else { return }
        var message = raised.message.map { String(cString: $0) } ?? "XML error \(raised.code)"
        while let last = message.last, last.isWhitespace { message.removeLast() }
        let line = raised.line > 0 ? Int(raised.line) : nil
        let column = raised.int2 > 0 ? Int(raised.int2) : nil
        let code: GPXError.Code
        switch xmlParserErrors(UInt32(bitPattern: raised.code)) {
        case XML_ERR_ENTITY_LOOP:
            code = .entityExpansion
            message = "entity expansion refused: \(message)"
        case _ where atEnd && rootSeen && !stack.isEmpty:
            // Raised only because the input ended: everything before parsed. libxml2's own words at this
            // point ("Extra content at the end of the document") mislead.
            if let undecodable = undecodableInput() {
                code = .malformedXML
                message = undecodable
            } else {
                code = .truncated
                message = "the file ends inside <\(openElementName)> (truncated?)"
            }
        case XML_ERR_DOCUMENT_EMPTY where !rootSeen:
            code = .malformedXML
            message = "the file is not XML: no element where the document should start"
        case _ where atEnd && !rootSeen:
            // libxml2 parses a construct only once it is complete, so what fails at the end of the input
            // before the root element was cut off: the declaration, the DOCTYPE, the root's start tag.
            code = .truncated
            message = "the file ends before its root element (truncated?)"
        default:
            code = .malformedXML
            message = "malformed XML: \(message)"
        }
        fail(code, line: line, column: column, message, stopsParser: false)
    }

    // MARK: - Callbacks

    private func startElement(
        _ localname: UnsafePointer<xmlChar>?, _ prefix: UnsafePointer<xmlChar>?, _ uri: UnsafePointer<xmlChar>?,
        _ attributeCount: Int, _ attributes: UnsafeMutablePointer<UnsafePointer<xmlChar>?>?
    ) {
        guard !failed, let localname, charge(1) else { return stopIfPending() }
        if atEnd, inputExhausted {
            // At the end of the input libxml2 reports a start tag cut off before its ">" with the attributes
            // it has so far (then an error): judging that tag would blame the file for what is missing.
            fail(.truncated, "the file ends inside the start tag \"<\(String(cString: localname))\" (truncated?)")
            return
        }
        let namespace = classify(uri, prefix)
        let name = Name(localname)
        let depth = stack.count + 1
        guard depth <= Self.maxDepth else {
            fail(.malformedXML, "elements are nested more than \(Self.maxDepth) levels deep")
            return
        }

        if !rootSeen {
            rootSeen = true
            guard namespace == .gpx, name == .gpx else {
                let uriText = uri.map { " in namespace \(String(cString: $0))" } ?? ""
                fail(.notGPX, "the root element is <\(String(cString: localname))>\(uriText), not a GPX <gpx>")
                return
            }
            stack.append(.gpx)
            return
        }
        if pointDepth > 0 {
            stack.append(.other)
            guard field == .none else { return }
            let captured: Field
            switch namespace {
            case .gpx where depth == pointDepth + 1: captured = Field(gpx: name)
            case .garmin: captured = Field(garmin: name)
            case .location: captured = Field(location: name)
            default: captured = .none
            }
            if captured == .none {
                if namespace == .gpx, depth == pointDepth + 1, name.isPoint {
                    fail(.misplacedElement, "<\(name.text)> inside another point")
                }
                return
            }
            field = captured
            fieldDepth = depth
            textCount = 0
            return
        }
        guard namespace == .gpx else {
            stack.append(.other)
            return
        }
        let parent = stack.last ?? .other
        switch name {
        case .trk where parent == .gpx:
            stack.append(.trk)
            trackCount += 1
            segmentCount = 0
        case .trkseg where parent == .trk:
            stack.append(.trkseg)
            segmentCount += 1
            pointCount = 0
        case .rte where parent == .gpx:
            stack.append(.rte)
            routeCount += 1
            pointCount = 0
        case .trkpt, .rtept, .wpt:
            let kind: GPXPoint.Kind
            switch (name, parent) {
            case (.trkpt, .trkseg):
                kind = .trackPoint
                current = GPXPoint(
                    kind: kind, container: trackCount - 1, segment: segmentCount - 1, index: pointCount,
                    line: line, latitude: 0, longitude: 0)
                pointCount += 1
            case (.rtept, .rte):
                kind = .routePoint
                current = GPXPoint(
                    kind: kind, container: routeCount - 1, index: pointCount, line: line,
                    latitude: 0, longitude: 0)
                pointCount += 1
            case (.wpt, .gpx):
                kind = .waypoint
                current = GPXPoint(kind: .waypoint, index: waypointCount, line: line, latitude: 0, longitude: 0)
                waypointCount += 1
            default:
                let expected = name == .trkpt ? "<trkseg>" : name == .rtept ? "<rte>" : "<gpx>"
                let actual = parent == .other ? "" : ", not in <\(parent.name)>"
                fail(.misplacedElement, "<\(name.text)> must be directly inside \(expected)\(actual)")
                return
            }
            stack.append(.point)
            pointDepth = depth
            readCoordinate(attributeCount, attributes)
        default:
            stack.append(.other)
        }
    }

    private func readCoordinate(_ count: Int, _ attributes: UnsafeMutablePointer<UnsafePointer<xmlChar>?>?) {
        var latitude: Double?
        var longitude: Double?
        if let attributes {
            for index in 0..<count {
                // Five pointers per attribute: localname, prefix, URI, value start, value end.
                let base = attributes + index * 5
                guard base[2] == nil, let name = base[0], let start = base[3], let end = base[4] else { continue }
                let isLatitude: Bool
                if name[0] == 0x6C, name[1] == 0x61, name[2] == 0x74, name[3] == 0 {
                    isLatitude = true
                } else if name[0] == 0x6C, name[1] == 0x6F, name[2] == 0x6E, name[3] == 0 {
                    isLatitude = false
                } else {
                    continue
                }
                let value = UnsafeBufferPointer(start: start, count: end - start)
                guard let number = GPXNumber.parseDouble(value) else {
                    let shown = Self.quote(value)
                    fail(.invalidCoordinate, "\(isLatitude ? "lat" : "lon")=\(shown) is not a number")
                    return
                }
                if isLatitude {
                    guard number >= -90, number <= 90 else {
                        fail(.invalidCoordinate, "latitude \(Self.quote(value)) is outside [-90, 90]")
                        return
                    }
                    latitude = number
                } else {
                    guard number >= -180, number <= 180 else {
                        fail(.invalidCoordinate, "longitude \(Self.quote(value)) is outside [-180, 180]")
                        return
                    }
                    longitude = number
                }
            }
        }
        guard let latitude, let longitude else {
            let missing = latitude == nil && longitude == nil ? "lat and lon" : latitude == nil ? "lat" : "lon"
            fail(.missingCoordinate, "<\(current.kind.rawValue)> has no \(missing) attribute")
            return
        }
        current.latitude = latitude
        current.longitude = longitude
    }

    private func endElement() {
        guard !failed, !stack.isEmpty else { return stopIfPending() }
        let depth = stack.count
        if field != .none, depth == fieldDepth {
            store(field)
            field = .none
        } else if depth == pointDepth {
            pointDepth = 0
            pending.append(current)
        }
        stack.removeLast()
    }

    /// Counts the work a callback brings; `false` (and an error) once entity expansion has produced far more
    /// than the input holds: eight times its size plus 1 MiB. Without entities, text and elements can only
    /// be as large as the input (twice that, for ISO-8859-1 turned into UTF-8).
    private func charge(_ amount: Int) -> Bool {
        delivered &+= amount
        guard delivered > 8 &* fedBytes &+ (1 << 20) else { return true }
        fail(.entityExpansion, "entity references expand to more than 8 times the size of the input; refusing to continue")
        return false
    }

    private func characters(_ bytes: UnsafePointer<xmlChar>?, _ count: Int) {
        guard !failed, charge(count) else { return stopIfPending() }
        guard field != .none, stack.count == fieldDepth, let bytes else { return }
        let needed = textCount + count
        if needed > textCapacity {
            guard needed <= Self.maxTextLength else {
                fail(.invalidValue, "the text of <\(field.name)> is longer than \(Self.maxTextLength) bytes")
                return
            }
            var capacity = textCapacity
            while capacity < needed { capacity *= 2 }
            let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
            grown.update(from: text, count: textCount)
            text.deallocate()
            text = grown
            textCapacity = capacity
        }
        (text + textCount).update(from: bytes, count: count)
        textCount = needed
    }

    // MARK: - Fields

    private func store(_ field: Field) {
        let value = UnsafeBufferPointer(start: text, count: textCount)
        if GPXNumber.isBlank(value), field != .name, field != .source {
            return  // an empty element is an absent value
        }
        switch field {
        case .none: break
        case .time:
            guard let parsed = RFC3339.parse(value) else {
                fail(.invalidTime, "<time>\(Self.quote(value))</time> is not a valid RFC 3339 date-time")
                return
            }
            current.time = parsed.date
            current.timeHasZone = parsed.hasZone
        case .name: current.name = String(decoding: value, as: UTF8.self)
        case .source: current.sourceName = String(decoding: value, as: UTF8.self)
        case .fix:
            let trimmed = String(decoding: value, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard let fix = GPXPoint.Fix(rawValue: trimmed) else {
                fail(.invalidValue, "<fix>\(Self.quote(value))</fix> is not one of none, 2d, 3d, dgps, pps")
                return
            }
            current.fix = fix
        case .fixMode:
            let trimmed = String(decoding: value, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard let mode = FixMode(rawValue: trimmed) else {
                fail(.invalidValue, "<loc:fixMode>\(Self.quote(value))</loc:fixMode> is not 2D or 3D")
                return
            }
            current.fixMode = mode
        case .correctionStatus:
            let trimmed = String(decoding: value, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard let status = CorrectionStatus(rawValue: trimmed) else {
                let known = CorrectionStatus.allCases.map(\.rawValue).joined(separator: ", ")
                fail(.invalidValue, "<loc:correctionStatus>\(Self.quote(value))</loc:correctionStatus> is not one of \(known)")
                return
            }
            current.correctionStatus = status
        case .satellites, .heartRate, .cadence, .satellitesVisible:
            guard let number = GPXNumber.parseInt(value) else {
                fail(.invalidValue, "<\(field.name)>\(Self.quote(value))</\(field.name)> is not a whole number ≥ 0")
                return
            }
            switch field {
            case .satellites: current.satellites = number
            case .satellitesVisible: current.satellitesVisible = number
            case .heartRate: current.heartRate = number
            default: current.cadence = number
            }
        case .simulated:
            let trimmed = String(decoding: value, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            switch trimmed {
            case "true", "1": current.isSimulated = true
            case "false", "0": current.isSimulated = false
            default:
                fail(.invalidValue, "<loc:simulated>\(Self.quote(value))</loc:simulated> is not true or false")
            }
        default:
            guard let number = GPXNumber.parseDouble(value) else {
                fail(.invalidValue, "<\(field.name)>\(Self.quote(value))</\(field.name)> is not a number")
                return
            }
            switch field {
            case .elevation: current.elevation = number
            case .speed: current.speed = number
            case .course: current.course = number
            case .hdop: current.hdop = number
            case .vdop: current.vdop = number
            case .pdop: current.pdop = number
            case .geoidHeight: current.geoidHeight = number
            case .horizontalAccuracy: current.horizontalAccuracy = number
            case .verticalAccuracy: current.verticalAccuracy = number
            case .speedAccuracy: current.speedAccuracy = number
            case .courseAccuracy: current.courseAccuracy = number
            case .climb: current.climb = number
            case .ellipsoidalAltitude: current.ellipsoidalAltitude = number
            case .airTemperature: current.airTemperature = number
            case .waterTemperature: current.waterTemperature = number
            case .depth: current.depth = number
            default: break
            }
        }
    }

    private static func quote(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        let text = String(decoding: bytes.prefix(80), as: UTF8.self)
        return "\"" + text + (bytes.count > 80 ? "…" : "") + "\""
    }

    // MARK: - Names

    private func classify(_ uri: UnsafePointer<xmlChar>?, _ prefix: UnsafePointer<xmlChar>?) -> Namespace {
        guard let uri else {
            // No namespace. A prefix without a binding (a libxml2 namespace error) is not GPX.
            return prefix == nil ? .gpx : .other
        }
        if uri == lastURI { return lastNamespace }
        let namespace = Namespace(uri)
        // Cache only pointers libxml2's dictionary owns: those stay valid and unique for the whole parse.
        if let dict = context?.pointee.dict, xmlDictOwns(dict, uri) == 1 {
            lastURI = uri
            lastNamespace = namespace
        }
        return namespace
    }
}

/// The structural elements the parser tracks.
private enum Element: UInt8 {
    case gpx, trk, trkseg, rte, point, other

    var name: String {
        switch self {
        case .gpx: "gpx"
        case .trk: "trk"
        case .trkseg: "trkseg"
        case .rte: "rte"
        case .point: "point"
        case .other: "element"
        }
    }
}

private enum Namespace: UInt8 {
    case gpx, garmin, location, other

    init(_ uri: UnsafePointer<xmlChar>) {
        if equals(uri, "http://www.topografix.com/GPX/1/1") || equals(uri, "http://www.topografix.com/GPX/1/0") {
            self = .gpx
        } else if startsWith(uri, "http://www.garmin.com/xmlschemas/TrackPointExtension/v") {
            self = .garmin
        } else if equals(uri, "https://swift-location.dev/xmlns/gpx-location/1") {
            self = .location
        } else {
            self = .other
        }
    }
}

/// Element local names the parser knows, in any namespace.
private enum Name: UInt8 {
    case other
    case gpx, trk, trkseg, rte, trkpt, rtept, wpt
    case ele, time, speed, course, fix, sat, hdop, vdop, pdop, geoidheight, name, src
    case hr, cad, atemp, wtemp, depth
    case horizontalAccuracy, verticalAccuracy, speedAccuracy, courseAccuracy, climb, ellipsoidalAltitude
    case simulated, fixMode, correctionStatus, satellitesVisible

    var isPoint: Bool { self == .trkpt || self == .rtept || self == .wpt }

    var text: String { "\(self)" }

    init(_ p: UnsafePointer<xmlChar>) {
        switch p[0] {
        case 0x61:  // a
            self = equals(p, "atemp") ? .atemp : .other
        case 0x63:  // c
            self =
                equals(p, "course") ? .course : equals(p, "cad") ? .cad
                : equals(p, "climb") ? .climb : equals(p, "courseAccuracy") ? .courseAccuracy
                : equals(p, "correctionStatus") ? .correctionStatus : .other
        case 0x64:  // d
            self = equals(p, "depth") ? .depth : .other
        case 0x65:  // e
            self =
                equals(p, "ele") ? .ele : equals(p, "ellipsoidalAltitude") ? .ellipsoidalAltitude : .other
        case 0x66:  // f
            self = equals(p, "fix") ? .fix : equals(p, "fixMode") ? .fixMode : .other
        case 0x67:  // g
            self = equals(p, "gpx") ? .gpx : equals(p, "geoidheight") ? .geoidheight : .other
        case 0x68:  // h
            self =
                equals(p, "hdop") ? .hdop : equals(p, "hr") ? .hr
                : equals(p, "horizontalAccuracy") ? .horizontalAccuracy : .other
        case 0x6E:  // n
            self = equals(p, "name") ? .name : .other
        case 0x70:  // p
            self = equals(p, "pdop") ? .pdop : .other
        case 0x72:  // r
            self = equals(p, "rtept") ? .rtept : equals(p, "rte") ? .rte : .other
        case 0x73:  // s
            self =
                equals(p, "speed") ? .speed : equals(p, "sat") ? .sat : equals(p, "src") ? .src
                : equals(p, "speedAccuracy") ? .speedAccuracy : equals(p, "simulated") ? .simulated
                : equals(p, "satellitesVisible") ? .satellitesVisible : .other
        case 0x74:  // t
            self =
                equals(p, "trkpt") ? .trkpt : equals(p, "time") ? .time : equals(p, "trkseg") ? .trkseg
                : equals(p, "trk") ? .trk : .other
        case 0x76:  // v
            self = equals(p, "vdop") ? .vdop : equals(p, "verticalAccuracy") ? .verticalAccuracy : .other
        case 0x77:  // w
            self = equals(p, "wpt") ? .wpt : equals(p, "wtemp") ? .wtemp : .other
        default:
            self = .other
        }
    }
}

/// The value-carrying child elements of a point.
private enum Field: UInt8 {
    case none
    case elevation, time, speed, course, fix, satellites, hdop, vdop, pdop, geoidHeight, name, source
    case heartRate, cadence, airTemperature, waterTemperature, depth
    case horizontalAccuracy, verticalAccuracy, speedAccuracy, courseAccuracy, climb, ellipsoidalAltitude
    case simulated, fixMode, correctionStatus, satellitesVisible

    init(gpx name: Name) {
        switch name {
        case .ele: self = .elevation
        case .time: self = .time
        case .speed: self = .speed  // GPX 1.0
        case .course: self = .course  // GPX 1.0
        case .fix: self = .fix
        case .sat: self = .satellites
        case .hdop: self = .hdop
        case .vdop: self = .vdop
        case .pdop: self = .pdop
        case .geoidheight: self = .geoidHeight
        case .name: self = .name
        case .src: self = .source
        default: self = .none
        }
    }

    init(garmin name: Name) {
        switch name {
        case .hr: self = .heartRate
        case .cad: self = .cadence
        case .atemp: self = .airTemperature
        case .wtemp: self = .waterTemperature
        case .depth: self = .depth
        case .speed: self = .speed  // v2
        case .course: self = .course  // v2
        default: self = .none
        }
    }

    init(location name: Name) {
        switch name {
        case .speed: self = .speed
        case .course: self = .course
        case .horizontalAccuracy: self = .horizontalAccuracy
        case .verticalAccuracy: self = .verticalAccuracy
        case .speedAccuracy: self = .speedAccuracy
        case .courseAccuracy: self = .courseAccuracy
        case .climb: self = .climb
        case .ellipsoidalAltitude: self = .ellipsoidalAltitude
        case .simulated: self = .simulated
        case .fixMode: self = .fixMode
        case .correctionStatus: self = .correctionStatus
        case .satellitesVisible: self = .satellitesVisible
        default: self = .none
        }
    }

    var name: String {
        switch self {
        case .elevation: "ele"
        case .satellites: "sat"
        case .geoidHeight: "geoidheight"
        case .source: "src"
        case .heartRate: "hr"
        case .cadence: "cad"
        case .airTemperature: "atemp"
        case .waterTemperature: "wtemp"
        default: "\(self)"
        }
    }
}

/// Whether the NUL-terminated `p` equals `s`; never reads past `p`'s terminator.
@inline(__always)
private func equals(_ p: UnsafePointer<xmlChar>, _ s: StaticString) -> Bool {
    let bytes = s.utf8Start
    let count = s.utf8CodeUnitCount
    for i in 0..<count where p[i] != bytes[i] { return false }
    return p[count] == 0
}

/// Whether the NUL-terminated `p` starts with `s`.
@inline(__always)
private func startsWith(_ p: UnsafePointer<xmlChar>, _ s: StaticString) -> Bool {
    let bytes = s.utf8Start
    for i in 0..<s.utf8CodeUnitCount where p[i] != bytes[i] { return false }
    return true
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
