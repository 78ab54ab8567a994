import Foundation
import LocationService
import LocationCore

/// The group given a socket (`control.group`, `--control-group`; `nmea.group`, `--nmea-group`), as a number.
package enum ControlGroup {
    /// Which socket a group is for, in the words of messages.
    package struct Purpose: Sendable {
        /// `control`, `NMEA`.
        var name: String
        var flag: String
        var key: String
        var example: String

        /// The control socket's group.
        package static let control = Purpose(name: "control", flag: "--control-group", key: "control.group", example: "locationd")
        /// The NMEA socket's group.
        package static let nmea = Purpose(name: "NMEA socket", flag: "--nmea-group", key: "nmea.group", example: "geoclue")
    }

    /// The group named by `name` (a group name or a number), or `nil` when no group is asked for.
    ///
    /// - Throws: A usage failure (64) saying how to create the group when no group of that name exists.
    package static func id(_ name: String?, for purpose: Purpose = .control) throws(CommandFailure) -> UInt32? {
        guard let name else { return nil }
        guard !name.isEmpty else { throw CommandFailure.usage("the \(purpose.name) group is empty; name a group, such as \(purpose.example)") }
        // A number is taken as it is: a group need not have a name to own a file.
        if let number = UInt32(name), number != UInt32.max { return number }
        var group = group()
        var result: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 16 * 1024)
        let status = getgrnam_r(name, &group, &buffer, buffer.count, &result)
        guard status == 0, let result else {
            let reason = status == 0 ? "no such group" : String(cString: strerror(status))
            throw CommandFailure.usage(
                "\(purpose.name) group '\(ValueRange.printable(name))': \(reason); create it (groupadd --system \(ValueRange.printable(name))), "
                    + "or name another group with \(purpose.flag) or \(purpose.key)")
        }
        return UInt32(result.pointee.gr_gid)
    }
}
