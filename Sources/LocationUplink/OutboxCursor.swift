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

    /// Opens (or creates, 0600) the record at `path`; a link, a FIFO or anything but a regular file of its
    /// own there is refused: every later write must land.
    init(path: String) throws(LocationError) {
        self.path = path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
        guard fd >= 0 else {
            throw LocationError(.journalIO, "cannot open the outbox cursor \(path): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw LocationError(.journalIO, "the outbox cursor \(path) is not a regular file; remove it")
        }
        state.withLock { $0.fd = fd }
    }

    /// What the record says of the journal at `journalPath` as it is now.
    func acknowledged(journalPath: String) -> Reading {
        var bytes = [UInt8](repeating: 0, count: Self.size)
        let read = state.withLock { state in
            bytes.withUnsafeMutableBytes { SystemIO.read(state.fd, into: $0, at: 0) }
        }
        switch read {
        case .success(0): return .unknown(nil)  // new: nothing was acknowledged
        case .success(Self.size): break
        case .success: return .unknown("the outbox cursor \(path) is cut short")
        case .failure(let failure): return .unknown("the outbox cursor \(path) cannot be read: \(failure)")
        }
        guard Array(bytes[0..<4]) == Self.magic, let record = Self.decode(bytes) else {
            return .unknown("the outbox cursor \(path) is damaged")
        }
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
    ///
    /// With `sync`, the record is on disk when this returns: a rewrite of the journal depends on it (after a
    /// power cut, an old count beside a journal rewritten under it would skip fixes never sent).
    func write(journalPath: String, acknowledged: Int?, staged: String?, sync: Bool = false) {
        state.withLock { state in
            var info = stat()
            if stat(journalPath, &info) == 0 { state.record.inode = UInt64(info.st_ino) }
            if let acknowledged { state.record.acknowledged = UInt64(max(0, acknowledged)) }
            state.record.staged = 0
            if let staged, stat(staged, &info) == 0 { state.record.staged = UInt64(info.st_ino) }
            let bytes = Self.encode(state.record)
            _ = bytes.withUnsafeBytes { pwrite(state.fd, $0.baseAddress, $0.count, 0) }
            if sync { fsync(state.fd) }
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
