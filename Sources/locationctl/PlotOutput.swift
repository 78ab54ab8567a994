import Foundation
import LocationCommandLine

#if canImport(Glibc)
    import Glibc
#endif

/// Where `locationctl plot` writes its picture: standard output (`-`), or a file that is replaced only once
/// the picture is complete.
///
/// Unlike the event outputs, which open the path itself so that a live file grows as fixes arrive, a picture
/// is written to a temporary file beside the path and renamed over it at the end: a plot that fails halfway
/// (bad input, a full disk) leaves an existing picture as it was. The new file gets the mode of the one it
/// replaces, or 0600 (a track is personal data); a symbolic link is followed, and the file it points to
/// replaced. A directory or a device is refused; a FIFO is written to.
final class PlotOutput {
    /// The name used in messages.
    let name: String
    private let descriptor: Int32
    /// The temporary file and the path it becomes, when writing a regular file.
    private let rename: (temporary: String, final: String)?
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
        let directory = target.contains("/") ? String(target[..<target.lastIndex(of: "/")!]) : "."
        let base = target.split(separator: "/").last.map(String.init) ?? "plot"
        var template = Array("\(directory.isEmpty ? "/" : directory)/.\(base).XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else {
            throw CommandFailure.cannotCreate("cannot create \(argument): \(String(cString: strerror(errno)))")
        }
        let temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        // mkstemp makes 0600; a picture that replaces a file keeps that file's mode.
        if exists, type == S_IFREG { _ = fchmod(fd, info.st_mode & 0o7777) }
        descriptor = fd
        rename = (temporary, target)
    }

    deinit {
        if !closed, let rename {
            Glibc.close(descriptor)
            unlink(rename.temporary)
        }
    }

    /// Writes all of `bytes`.
    /// - Throws: ``PlotOutput/ReaderGone`` when the reader of a pipe went away, 74 when a write fails.
    func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = Glibc.write(descriptor, raw.baseAddress! + offset, raw.count - offset)
                if written < 0 {
                    let number = errno
                    if number == EINTR { continue }
                    if number == EPIPE { throw ReaderGone() }
                    throw CommandFailure.ioError("cannot write to \(name): \(String(cString: strerror(number)))")
                }
                offset += written
            }
        }
    }

    /// Completes the output: a file is flushed to disk and renamed over the path.
    func commit() throws(CommandFailure) {
        guard let rename, !closed else { return }
        closed = true
        let synced = fsync(descriptor) == 0
        let reason = String(cString: strerror(errno))
        let closedCleanly = Glibc.close(descriptor) == 0
        guard synced, closedCleanly else {
            unlink(rename.temporary)
            throw CommandFailure.ioError("cannot write to \(name): \(reason)")
        }
        guard Glibc.rename(rename.temporary, rename.final) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(rename.temporary)
            throw CommandFailure.cannotCreate("cannot replace \(name): \(reason)")
        }
    }

    /// The reader of standard output went away (as `| head` does): the command ends quietly with 0.
    struct ReaderGone: Error {}
}
