internal import CGPS
import Foundation
import LocationCore

/// One open libgps connection, owning its heap-allocated `gps_data_t`.
///
/// The type makes libgps's crashes unrepresentable: a value exists only after `gps_open` succeeded (a
/// failed open throws and leaves nothing to read from), it is noncopyable (a copy of `gps_data_t` would
/// share libgps's private buffer and double-free it), and closing consumes it, so nothing can wait on or
/// read from a closed session. It is not `Sendable`: it lives and dies on the thread that opened it.
struct GPSDSession: ~Copyable {
    /// The outcome of one ``read()``.
    enum ReadResult {
        /// One complete line was read and decoded.
        case message(GPSDReport)
        /// Only part of a line has arrived; wait for the socket before reading again.
        case partial
        /// The connection failed or gpsd closed it, or the peer sent something that is not gpsd JSON.
        case failed(LocationError)
    }

    private let data: UnsafeMutablePointer<gps_data_t>
    /// libgps copies each line it reads here, so lines that are not gpsd JSON can be recognised.
    private let line: UnsafeMutableBufferPointer<CChar>
    private let endpoint: String

    /// Connects to gpsd; throws `.sourceUnavailable` with libgps's reason when it cannot.
    init(host: String, port: Int) throws(LocationError) {
        endpoint = "\(host):\(port)"
        // Zeroed in place: building a 24 KB `gps_data_t()` value would go through the stack.
        let raw = UnsafeMutableRawPointer.allocate(
            byteCount: MemoryLayout<gps_data_t>.size, alignment: MemoryLayout<gps_data_t>.alignment)
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<gps_data_t>.size)
        let data = raw.bindMemory(to: gps_data_t.self, capacity: 1)
        guard gps_open(host, String(port), data) == 0 else {
            let code = cgps_errno()
            raw.deallocate()
            throw LocationError(
                .sourceUnavailable, "cannot connect to gpsd at \(host):\(port): \(Self.describe(code))")
        }
        self.data = data
        line = .allocate(capacity: 512)
        line.initialize(repeating: 0)
    }

    deinit {
        gps_close(data)
        data.deallocate()
        line.deallocate()
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

    /// Whether libgps already holds unread bytes, or the socket is readable within `microseconds`.
    func isWaiting(microseconds: Int32 = 0) -> Bool {
        gps_waiting(data, microseconds)
    }

    /// Reads and decodes exactly one line.
    func read() -> ReadResult {
        data.pointee.set = 0
        errno = 0
        let count = cgps_read(data, line.baseAddress, Int32(line.count))
        if count < 0 {
            let code = cgps_errno()
            let reason = code == 0 ? "gpsd closed the connection" : "read failed: \(Self.describe(code))"
            return .failed(LocationError(.sourceFailed, "gpsd at \(endpoint): \(reason)"))
        }
        if count == 0 { return .partial }
        // gpsd speaks JSON objects only; anything else means the peer is not gpsd (or is broken).
        let first = line.first { $0 != 0x20 && $0 != 0x09 } ?? 0
        guard first == CChar(UInt8(ascii: "{")) else {
            return .failed(LocationError(
                .sourceFailed, "the peer at \(endpoint) is not speaking gpsd's JSON protocol; it sent \(quotedLine())"))
        }
        return .message(decode())
    }

    /// The start of the last line read, quoted and escaped for an error message.
    private func quotedLine() -> String {
        let bytes = line.prefix { $0 != 0 }.prefix(60).map { UInt8(bitPattern: $0) }
        let text = String(decoding: bytes, as: UTF8.self).unicodeScalars
            .map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? String($0) : $0.escaped(asASCII: true) }
            .joined()
        return "\"\(text)\(bytes.count == 60 ? "…" : "")\""
    }

    /// Turns what the last read set into a report, reading fields in place (never copying the struct).
    private func decode() -> GPSDReport {
        let set = data.pointee.set
        if set & CGPS_MODE_SET != 0 {
            let seconds = cgps_fix_time_seconds(data)
            let nanoseconds = cgps_fix_time_nanoseconds(data)
            let time = (seconds != 0 || nanoseconds != 0)
                ? GPSDTime(seconds: seconds, nanoseconds: nanoseconds) : nil
            let device = String(cString: cgps_device_path(data))
            return .fix(GPSDFix(
                mode: Int(data.pointee.fix.mode),
                time: time,
                latitude: data.pointee.fix.latitude,
                longitude: data.pointee.fix.longitude,
                altitudeMSL: cgps_fix_alt_msl(data),
                altitudeHAE: cgps_fix_alt_hae(data),
                eph: data.pointee.fix.eph,
                epx: data.pointee.fix.epx,
                epy: data.pointee.fix.epy,
                epv: data.pointee.fix.epv,
                speed: data.pointee.fix.speed,
                eps: data.pointee.fix.eps,
                track: data.pointee.fix.track,
                epd: data.pointee.fix.epd,
                climb: data.pointee.fix.climb,
                device: device.isEmpty ? nil : device
            ))
        }
        if set & CGPS_SATELLITE_SET != 0 {
            let used = Int(data.pointee.satellites_used)
            let dop = data.pointee.dop
            return .sky(
                satellitesUsed: used >= 0 ? used : nil, hdop: Optional(dop.hdop).finiteValue,
                vdop: Optional(dop.vdop).finiteValue, pdop: Optional(dop.pdop).finiteValue)
        }
        return .other
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
