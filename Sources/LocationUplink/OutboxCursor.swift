import Foundation
import LocationCore

/// How many of an outbox journal's first records the receiver has acknowledged: a 32-byte record beside the
/// journal (`JOURNAL.cursor`), rewritten in place after each acknowledgement.
///
/// It names the journal by its inode, and while a rewritten journal is renamed over the old one it names the
/// staged file too (with nothing acknowledged in it), so that no crash leaves it counting records of another
/// file: a record that names neither file, or is torn (its checksum fails), counts nothing as acknowledged,
/// and the outbox sends everything again rather than skip what was never acknowledged.
final class OutboxCursor: Sendable {
    enum Reading: Sendable, Equatable {
        case count(Int)
        /// Nothing is known to be acknowledged; the reason, unless the record is simply absent.
        case unknown(String?)
    }

    private struct Record {
        var inode: UInt64 = 0
        var acknowledged: UInt64 = 0
        var staged: UInt64 = 0
    }

    let path: String
    private let state = Locked<(fd: Int32, record: Record)>((-1, Record()))
    private static let magic: [UInt8] = Array("OBC1".utf8)
    private static let size = 32

    init(path: String) {
        self.path = path
    }

    /// What the record says of the journal at `journalPath` as it is now.
    func acknowledged(journalPath: String) -> Reading {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else {
            return errno == ENOENT ? .unknown(nil) : .unknown("the outbox cursor \(path) cannot be read: \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: Self.size)
        guard case .success(Self.size) = SystemIO.read(fd, into: &bytes, upTo: Self.size),
            Array(bytes[0..<4]) == Self.magic,
            let record = Self.decode(bytes)
        else { return .unknown("the outbox cursor \(path) is damaged") }
        var info = stat()
        guard stat(journalPath, &info) == 0 else { return .unknown(nil) }
        let inode = UInt64(info.st_ino)
        if inode == record.inode { return .count(Int(clamping: record.acknowledged)) }
        if inode == record.staged { return .count(0) }
        return .unknown("the outbox cursor \(path) names another file than \(journalPath)")
    }

    /// Writes the record for the journal at `journalPath`: `acknowledged` of its first records (unchanged
    /// when `nil`), and the staged file about to be renamed over it, if any. A failure is not thrown: the
    /// record then says less than is true, and only repeats fixes.
    func write(journalPath: String, acknowledged: Int?, staged: String?) {
        state.withLock { state in
            if state.fd < 0 {
                state.fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
                guard state.fd >= 0 else { return }
            }
            var info = stat()
            if stat(journalPath, &info) == 0 { state.record.inode = UInt64(info.st_ino) }
            if let acknowledged { state.record.acknowledged = UInt64(max(0, acknowledged)) }
            state.record.staged = 0
            if let staged, stat(staged, &info) == 0 { state.record.staged = UInt64(info.st_ino) }
            let bytes = Self.encode(state.record)
            _ = bytes.withUnsafeBytes { pwrite(state.fd, $0.baseAddress, $0.count, 0) }
        }
    }

    deinit {
        state.withLock { if $0.fd >= 0 { close($0.fd) } }
    }

    private static func encode(_ record: Record) -> [UInt8] {
        var bytes = magic
        for value in [record.inode, record.acknowledged, record.staged] {
            withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
        }
        let crc = bytes.withUnsafeBufferPointer { CRC32.checksum($0) }
        withUnsafeBytes(of: crc.littleEndian) { bytes.append(contentsOf: $0) }
        return bytes
    }

    private static func decode(_ bytes: [UInt8]) -> Record? {
        let crc = bytes[0..<28].withUnsafeBufferPointer { CRC32.checksum($0) }
        func word(_ offset: Int) -> UInt64 {
            bytes[offset..<offset + 8].enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
        }
        let stored = bytes[28..<32].enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
        guard stored == crc else { return nil }
        return Record(inode: word(4), acknowledged: word(12), staged: word(20))
    }
}
