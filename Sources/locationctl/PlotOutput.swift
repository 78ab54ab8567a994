import Foundation
import LocationCore
import LocationService

#if canImport(Glibc)
    import Glibc
#endif

/// Where `locationctl plot` writes its picture: standard output (`-`), or a file that is replaced only once
/// the picture is complete.
///
/// Unlike the event outputs, which open the path itself so that a live file grows as fixes arrive, a picture
/// is written to a temporary file beside the path and renamed over it at the end: a plot that fails halfway
/// (bad input, a full disk, a kill) leaves an existing picture as it was, and no temporary file behind. The new file gets the mode of the one it
/// replaces, or 0600 (a track is personal data); a symbolic link is followed, and the file it points to
/// replaced. A directory or a device is refused; a FIFO is written to.
final class PlotOutput {
    /// The name used in messages.
    let name: String
    private let descriptor: Int32
    /// When writing a regular file: the named temporary file (`nil` for a nameless one), the name a nameless
    /// one is linked to before the rename, and the path it becomes.
    private let rename: (named: String?, linkName: String, final: String)?
    private var closed = false

    /// Opens the output.
    /// - Throws: 73 naming the path for a directory, a device, or a place where no file can be created.
    init(_ argument: String) throws(CommandFailure) {
        if argument == "-" {
            name = "standard output"
            descriptor = STDOUT_FILENO
            rename = nil
            return
        }
        name = argument
        var info = stat()
        let exists = stat(argument, &info) == 0
        let type = info.st_mode & S_IFMT
        if exists, type == S_IFDIR {
            throw CommandFailure.cannotCreate("\(argument) is a directory; give a file name such as \(argument)/track.svg")
        }
        if exists, type == S_IFCHR || type == S_IFBLK {
            throw CommandFailure.cannotCreate("\(argument) is a device, not a file; use --output - to write to standard output")
        }
        if exists, type == S_IFIFO {
            let fd = open(argument, O_WRONLY | O_CLOEXEC | O_NOCTTY)
            guard fd >= 0 else { throw CommandFailure.cannotCreate("cannot open \(argument): \(String(cString: strerror(errno)))") }
            descriptor = fd
            rename = nil
            return
        }
        // A symbolic link stays a link: the file it points to is the one replaced.
        var target = argument
        if exists, let resolved = realpath(argument, nil) {
            target = String(cString: resolved)
            free(resolved)
        }
        let directory = FilePathText.parent(of: target)
        let base = target.split(separator: "/").last.map(String.init) ?? "plot"
        let folder = directory.isEmpty ? "/" : directory
        // A nameless file (O_TMPFILE) leaves nothing behind if the process is killed while drawing; it gets a
        // name only at the end. Where the file system cannot make one, a named temporary file is used.
        var fd = open(folder, Self.temporaryFileFlag | O_WRONLY | O_CLOEXEC, 0o600)
        var named: String?
        if fd < 0, [EINVAL, EOPNOTSUPP, EISDIR].contains(errno) {
            var template = Array("\(folder)/.\(base).XXXXXX".utf8CString)
            fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
            if fd >= 0 { named = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) } }
        }
        guard fd >= 0 else {
            throw CommandFailure.cannotCreate("cannot create \(argument): \(String(cString: strerror(errno)))")
        }
        // A new file is 0600; a picture that replaces a file keeps that file's owner and mode. Another user's
        // file that this user may not give back to them (not root) is written in place instead, as the other
        // commands write their outputs: it stays theirs.
        if exists, type == S_IFREG {
            if info.st_uid != geteuid() || info.st_gid != getegid(), fchown(fd, info.st_uid, info.st_gid) != 0 {
                Glibc.close(fd)
                if let named { unlink(named) }
                let inPlace = open(target, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY)
                guard inPlace >= 0 else { throw CommandFailure.cannotCreate("cannot open \(argument): \(String(cString: strerror(errno)))") }
                descriptor = inPlace
                rename = nil
                return
            }
            _ = fchmod(fd, info.st_mode & 0o7777)
        }
        descriptor = fd
        rename = (named, "\(folder)/.\(base).\(getpid()).tmp", target)
    }

    /// `O_TMPFILE` (`__O_TMPFILE | O_DIRECTORY` in Linux's generic flags), which Swift does not import.
    private static let temporaryFileFlag: Int32 = 0o20000000 | O_DIRECTORY

    deinit {
        if !closed, let rename {
            Glibc.close(descriptor)
            if let named = rename.named { unlink(named) }
        }
    }

    /// Writes all of `bytes`.
    /// - Throws: ``PlotOutput/ReaderGone`` when the reader of a pipe went away, 74 when a write fails.
    func write(_ bytes: [UInt8]) throws {
        switch OutputFile.write(bytes, to: descriptor) {
        case .written: return
        case .readerGone: throw ReaderGone()
        case .failed(let reason): throw CommandFailure.ioError("cannot write to \(name): \(reason)")
        }
    }

    /// Completes the output: a file is flushed to disk, given a name and renamed over the path.
    func commit() throws(CommandFailure) {
        guard let rename, !closed else { return }
        closed = true
        func fail(_ failure: CommandFailure, _ temporary: String?) -> CommandFailure {
            if let temporary { unlink(temporary) }
            return failure
        }
        if fsync(descriptor) != 0 {
            let reason = String(cString: strerror(errno))
            Glibc.close(descriptor)
            throw fail(.ioError("cannot write to \(name): \(reason)"), rename.named)
        }
        var temporary = rename.named
        if temporary == nil {
            unlink(rename.linkName)
            guard linkat(AT_FDCWD, "/proc/self/fd/\(descriptor)", AT_FDCWD, rename.linkName, AT_SYMLINK_FOLLOW) == 0 else {
                let reason = String(cString: strerror(errno))
                Glibc.close(descriptor)
                throw CommandFailure.cannotCreate("cannot create \(name): \(reason)")
            }
            temporary = rename.linkName
        }
        guard Glibc.close(descriptor) == 0 else {
            throw fail(.ioError("cannot write to \(name): \(String(cString: strerror(errno)))"), temporary)
        }
        guard let temporary, Glibc.rename(temporary, rename.final) == 0 else {
            throw fail(.cannotCreate("cannot replace \(name): \(String(cString: strerror(errno)))"), temporary)
        }
    }

    /// The reader of standard output went away (as `| head` does): the command ends quietly with 0.
    struct ReaderGone: Error {}
}
