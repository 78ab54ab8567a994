internal import CGPS
import Foundation
import LocationCore

/// One open libgps connection, owning its heap-allocated `gps_data_t`.
///
/// The type makes libgps's crashes unrepresentable: a value exists only after `gps_open` succeeded (a
/// failed open throws and leaves nothing to read from), it is noncopyable (a copy of `gps_data_t` would
/// share libgps's private buffer and double-free it), and closing consumes it, so nothing can wait on or
/// read from a closed session. It is not `Sendable`: it lives and dies on the thread that opened it.
///
/// Lines are framed by ``GPSDLineReader`` (a fixed buffer; overlong lines are skipped, not fatal), checked
/// by ``JSONLineValidator`` (only strict JSON objects reach libgps's lenient parser), decoded by libgps's
/// `gps_unpack`, and the decoded TPV is range-checked by ``GPSDFix/checked(mode:time:latitude:longitude:altitudeMSL:altitudeHAE:eph:epx:epy:epv:speed:eps:track:epd:climb:device:status:statusText:)``.
struct GPSDSession: ~Copyable {
    /// The outcome of one ``read()``.
    enum ReadResult {
        /// One line was read and decoded; `problem` names a value that was left out of it.
        case message(GPSDReport, problem: GPSDLineProblem?)
        /// One line was read and refused; the connection goes on.
        case skipped(GPSDLineProblem)
        /// No complete line has arrived; wait for the socket before reading again.
        case partial
        /// The connection failed or gpsd closed it.
        case failed(LocationError)
    }

    /// SKY dilutions of precision outside this are left out; 99.99, which receivers send for "unknown",
    /// is kept as gpsd reports it.
    static let dilutionRange = 0.0...100.0

    private let data: UnsafeMutablePointer<gps_data_t>
    private let reader = GPSDLineReader()
    private let endpoint: String
    /// Whether a SKY's satellites are read into its report (a sky watch); the location stream needs only
    /// the counts.
    private let readsSatellites: Bool

    /// Connects to gpsd; throws `.sourceUnavailable` with libgps's reason when it cannot.
    init(host: String, port: Int, readsSatellites: Bool = false) throws(LocationError) {
        endpoint = "\(host):\(port)"
        self.readsSatellites = readsSatellites
        // Zeroed in place: building a 24 KB `gps_data_t()` value would go through the stack.
        let raw = UnsafeMutableRawPointer.allocate(
            byteCount: MemoryLayout<gps_data_t>.size, alignment: MemoryLayout<gps_data_t>.alignment)
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<gps_data_t>.size)
        let data = raw.bindMemory(to: gps_data_t.self, capacity: 1)
        guard gps_open(host, String(port), data) == 0 else {
            let code = cgps_errno()
            raw.deallocate()
            throw LocationError(
                .sourceUnavailable, "cannot connect to gpsd at \(host.contains(":") ? "[\(host)]" : host):\(port): \(Self.describe(code))")
        }
        self.data = data
    }

    deinit {
        gps_close(data)
        data.deallocate()
    }

    /// Closes the connection now (the same as letting the session go out of scope).
    consuming func close() {}

    /// The socket, for waiting on it together with other descriptors.
    var fileDescriptor: Int32 { data.pointee.gps_fd }

    /// Asks gpsd to stream JSON reports (of one device when `devicePath` is given).
    func watch(devicePath: String?) throws(LocationError) {
        let status: Int32
        if let devicePath {
            status = devicePath.withCString { path in
                gps_stream(data, CGPS_WATCH_ENABLE_JSON_DEVICE, UnsafeMutableRawPointer(mutating: path))
            }
        } else {
            status = gps_stream(data, CGPS_WATCH_ENABLE_JSON, nil)
        }
        guard status == 0 else {
            throw LocationError(
                .sourceFailed, "gpsd at \(endpoint) refused the WATCH request: \(Self.describe(cgps_errno()))")
        }
    }

    /// Tells gpsd to stop streaming, so it may idle the receiver once no client watches.
    func unwatch() {
        _ = gps_stream(data, CGPS_WATCH_DISABLE, nil)
    }

    /// Whether a complete line is already buffered (reading it needs no wait for the socket).
    var hasBufferedLine: Bool { reader.hasLine }

    /// Reads and decodes one line, reading the socket at most once.
    func read() -> ReadResult {
        switch reader.next(from: data.pointee.gps_fd) {
        case .line(let line, let count):
            return decode(line: line, count: count)
        case .tooLong(let start):
            let quoted = start.withUnsafeBufferPointer { Self.quoted($0, limit: start.count - 1) }
            return .skipped(GPSDLineProblem(
                kind: .tooLong, detail: "longer than \(GPSDLineReader.capacity) bytes", quotedLine: quoted))
        case .needMore:
            return .partial
        case .closed(let midLine):
            let reason = midLine ? "closed the connection in the middle of a line" : "closed the connection"
            return .failed(LocationError(.sourceFailed, "gpsd at \(endpoint) \(reason)"))
        case .failed(let code) where code == ECONNRESET:
            return .failed(LocationError(.sourceFailed, "gpsd at \(endpoint) closed the connection abruptly (reset)"))
        case .failed(let code):
            return .failed(LocationError(.sourceFailed, "reading from gpsd at \(endpoint) failed: \(Self.describe(code))"))
        }
    }

    private func decode(line: UnsafeMutablePointer<UInt8>, count: Int) -> ReadResult {
        let bytes = UnsafeBufferPointer(start: line, count: count)
        func problem(_ kind: GPSDLineProblem.Kind, _ detail: String) -> GPSDLineProblem {
            GPSDLineProblem(kind: kind, detail: detail, quotedLine: Self.quoted(bytes))
        }
        let members: JSONLineValidator.Members
        switch JSONLineValidator.validate(bytes) {
        case .success(let found): members = found
        case .failure(let failure): return .skipped(problem(.notJSON, failure.reason))
        }
        guard members.className != nil else {
            return .skipped(problem(.noClass, "no \"class\" member"))
        }
        let isTPV = members.className.map { bytes[$0].elementsEqual("TPV".utf8) } ?? false
        if isTPV, let mode = members.mode, !(mode.count == 1 && (UInt8(ascii: "0")...UInt8(ascii: "3")).contains(bytes[mode.lowerBound])) {
            // libgps reads 1e300 as 1 and "2" as 0: gpsd's own text decides.
            let text = String(decoding: bytes[mode].prefix(40), as: UTF8.self)
            return .skipped(problem(.refusedFix, "mode \(text) (gpsd uses 0 to 3)"))
        }
        data.pointee.set = 0
        _ = line.withMemoryRebound(to: CChar.self, capacity: count + 1) { gps_unpack($0, data) }
        let set = data.pointee.set
        if isTPV, set & CGPS_MODE_SET == 0 {
            // Valid JSON that libgps cannot unpack (a string where a number belongs, spacing its parser
            // does not expect): said once, not dropped without a word.
            return .skipped(problem(.unreadableTPV, "libgps could not read"))
        }
        if set & CGPS_MODE_SET != 0 {
            // libgps turns an impossible date (month 13) into a real one: check gpsd's own text.
            var checkedTime: GPSDTime?
            if let time = members.time {
                guard let parsed = RFC3339.parse(UnsafeBufferPointer(rebasing: bytes[time])) else {
                    let text = String(decoding: bytes[time].prefix(40), as: UTF8.self)
                    return .skipped(problem(.refusedFix, "time \"\(text)\" (not an RFC 3339 date and time)"))
                }
                checkedTime = GPSDTime(date: parsed.date)
            }
            if let coordinate = members.nonNumericCoordinate {
                // libgps reads "lat":"52.5" as no latitude at all: a partial TPV, silently.
                let text = String(decoding: bytes[coordinate].prefix(60), as: UTF8.self).replacingOccurrences(of: "\"", with: "")
                return .skipped(problem(.refusedFix, "\(text) (a coordinate must be a number)"))
            }
            // libgps reads a status of 1e300 as 1 and "2" as 0, as it does a mode: gpsd's own text decides.
            var statusText: String?
            if let status = members.status {
                let text = String(decoding: bytes[status].prefix(40), as: UTF8.self)
                if Int(text) == nil { statusText = text }
            }
            return decodeTPV(checkedTime: checkedTime, statusText: statusText, problem: problem)
        }
        if set & CGPS_SATELLITE_SET != 0 {
            let used = Int(data.pointee.satellites_used)
            var leftOut: String?
            func dilution(_ value: Double, _ name: String) -> Double? {
                if value.isNaN { return nil }
                if value.isFinite, Self.dilutionRange.contains(value) { return value }
                if leftOut == nil { leftOut = "\(name) \(value.plainText) (outside 0…100)" }
                return nil
            }
            let dop = data.pointee.dop
            // libgps counts the satellites listed (3.22 ignores "nSat" and "uSat") and says 0 when a SKY lists
            // none: a SKY without a "satellites" member (one with dilutions only) says neither count.
            let visible = Int(data.pointee.satellites_visible)
            let listed = members.listsSatellites
            let report = GPSDReport.sky(
                satellitesUsed: listed && (0...Int(MAXCHANNELS)).contains(used) ? used : nil,
                satellitesVisible: listed && (0...Int(MAXCHANNELS)).contains(visible) ? visible : nil,
                hdop: dilution(dop.hdop, "hdop"), vdop: dilution(dop.vdop, "vdop"), pdop: dilution(dop.pdop, "pdop"),
                view: readsSatellites && listed ? skyView(count: visible, hdop: dilution(dop.hdop, "hdop"), vdop: dilution(dop.vdop, "vdop"), pdop: dilution(dop.pdop, "pdop")) : nil)
            return .message(report, problem: leftOut.map { problem(.valueLeftOut, "a SKY with " + $0) })
        }
        if set & CGPS_ERROR_SET != 0 {
            return .message(.gpsdError(String(cString: cgps_error_message(data))), problem: nil)
        }
        if set & CGPS_DEVICELIST_SET != 0 {
            return .message(.devices(count: Int(data.pointee.devices.ndevices)), problem: nil)
        }
        return .message(.other, problem: nil)
    }

    /// The satellites of the SKY just decoded, in gpsd's order, with its time and device.
    private func skyView(count: Int, hdop: Double?, vdop: Double?, pdop: Double?) -> SkyView {
        var satellites: [Satellite] = []
        let listed = min(max(0, count), Int(MAXCHANNELS))
        satellites.reserveCapacity(listed)
        for index in 0..<listed {
            let satellite = cgps_satellite(data, Int32(index)).pointee
            // gpsd numbers systems as u-blox does; svid 0 means it did not say which.
            let known = satellite.svid != 0
            satellites.append(Satellite(
                prn: Int(satellite.PRN),
                constellation: known ? Self.constellations[Int(satellite.gnssid)] : nil,
                systemNumber: known ? Int(satellite.svid) : nil,
                elevation: satellite.elevation, azimuth: satellite.azimuth,
                // libgps marks an unknown strength with NaN, and older receivers with 0 or -1.
                signalStrength: satellite.ss > 0 ? satellite.ss : nil,
                isUsed: satellite.used))
        }
        let seconds = cgps_skyview_time_seconds(data)
        let time = seconds != 0 ? GPSDTime(seconds: seconds, nanoseconds: cgps_skyview_time_nanoseconds(data)).date : nil
        let device = String(cString: cgps_device_path(data))
        return SkyView(time: time, source: device.isEmpty ? nil : device, satellites: satellites, hdop: hdop, vdop: vdop, pdop: pdop)
    }

    /// gpsd's (u-blox's) gnssid numbers.
    private static let constellations: [Int: Satellite.Constellation] = [
        0: .gps, 1: .sbas, 2: .galileo, 3: .beidou, 4: .imes, 5: .qzss, 6: .glonass, 7: .navic,
    ]

    /// Turns a decoded TPV into a fix report, reading fields in place (never copying the struct).
    private func decodeTPV(
        checkedTime: GPSDTime?, statusText: String?, problem: (GPSDLineProblem.Kind, String) -> GPSDLineProblem
    ) -> ReadResult {
        let seconds = cgps_fix_time_seconds(data)
        let nanoseconds = cgps_fix_time_nanoseconds(data)
        var time = (seconds != 0 || nanoseconds != 0) ? GPSDTime(seconds: seconds, nanoseconds: nanoseconds) : nil
        // libgps's value keeps full resolution; the checked one stands in when libgps could not read it.
        if time == nil { time = checkedTime }
        let device = String(cString: cgps_device_path(data))
        let fix = data.pointee.fix
        let checked = GPSDFix.checked(
            mode: Int(fix.mode), time: time, latitude: fix.latitude, longitude: fix.longitude,
            altitudeMSL: cgps_fix_alt_msl(data), altitudeHAE: cgps_fix_alt_hae(data),
            eph: fix.eph, epx: fix.epx, epy: fix.epy, epv: fix.epv, speed: fix.speed, eps: fix.eps,
            track: fix.track, epd: fix.epd, climb: fix.climb, device: device.isEmpty ? nil : device,
            status: statusText == nil ? Int(cgps_fix_status(data)) : nil, statusText: statusText)
        switch checked {
        case .refused(let reason):
            return .skipped(problem(.refusedFix, reason))
        case .fix(let fix, let leftOut):
            return .message(.fix(fix), problem: leftOut.map { problem(.valueLeftOut, "a TPV with " + $0) })
        }
    }

    /// The start of a line in single quotes (gpsd's JSON is full of double ones), with anything but
    /// printable ASCII escaped, for an error message.
    static func quoted(_ bytes: UnsafeBufferPointer<UInt8>, limit: Int = 60) -> String {
        var text = "'"
        // A line ending in CR LF shows without its CR.
        let count = bytes.last == 0x0D ? bytes.count - 1 : bytes.count
        for byte in bytes.prefix(min(limit, count)) {
            switch byte {
            case UInt8(ascii: "'"): text += "\\'"
            case UInt8(ascii: "\\"): text += "\\\\"
            case 0x20..<0x7F: text.unicodeScalars.append(UnicodeScalar(byte))
            default: text += "\\x" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return text + (count > limit ? "…'" : "'")
    }

    /// libgps's text for one of its (negative) error codes, or the system's for an errno.
    static func describe(_ code: Int32) -> String {
        if code < 0, let text = gps_errstr(code) {
            return "\(String(cString: text)) (libgps error \(code))"
        }
        if code > 0 { return "\(String(cString: strerror(code))) (errno \(code))" }
        return "unknown error"
    }
}

extension GPSDTime {
    /// The time of a `Date`, to the nanosecond `Date` can hold.
    init(date: Date) {
        let interval = date.timeIntervalSince1970
        let seconds = interval.rounded(.down)
        self.init(seconds: Int64(seconds), nanoseconds: Int64(((interval - seconds) * 1e9).rounded()))
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
