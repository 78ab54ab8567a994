import Foundation
import LocationCore

/// A consumer's regions and their states on disk: an app's `APP.journal.regions`, an uplink's
/// `uplinks/NAME.regions`. JSON of a `RegionMonitor.Snapshot`, written whole (synced, then renamed over the
/// old one) and read back at the start, so that a restart neither repeats an enter nor loses an exit.
enum RegionStateFile {
    /// The most a file may hold: 10,000 regions with names of 256 bytes escaped at worst, several times over.
    static let sizeLimit = 64 << 20

    /// What was found at a path.
    enum Reading {
        /// No file: nothing was saved.
        case absent
        /// The saved regions.
        case snapshot(RegionMonitor.Snapshot)
        /// This user may not read it (another user's, say root's from an earlier run): left where it is.
        case denied(String)
        /// Not a file of regions (a link, a FIFO, too large, not JSON of them): renamed `PATH.damaged` for a
        /// person to look at; the reason.
        case setAside(String)
    }

    /// Writes `snapshot` to `path`; removes the file when there are no regions.
    static func save(_ snapshot: RegionMonitor.Snapshot, to path: String) {
        guard !snapshot.records.isEmpty else {
            unlink(path)
            return
        }
        guard let data = try? JSONEncoder().encode(snapshot) else { return }
        AppSession.writeSmallFile(path, String(decoding: data, as: UTF8.self))
    }

    /// Reads the regions saved at `path` (no link followed).
    static func load(_ path: String) -> Reading {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else {
            let code = errno
            let reason = String(cString: strerror(code))
            switch code {
            case ENOENT: return .absent
            case EACCES, EPERM: return .denied(reason)
            default:
                rename(path, path + ".damaged")
                return .setAside("cannot be opened (\(reason); a link is not followed)")
            }
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size <= sizeLimit else {
            rename(path, path + ".damaged")
            return .setAside("is not a regular file of at most \(sizeLimit) bytes")
        }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        guard case .success(let count) = SystemIO.read(fd, into: &bytes, upTo: bytes.count), count == bytes.count,
            let snapshot = try? JSONDecoder().decode(RegionMonitor.Snapshot.self, from: Data(bytes))
        else {
            rename(path, path + ".damaged")
            return .setAside("cannot be read")
        }
        return .snapshot(snapshot)
    }
}
