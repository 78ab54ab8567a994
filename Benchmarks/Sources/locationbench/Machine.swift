import Foundation

/// A one-line description of the machine the figures were measured on.
enum Machine {
    static var description: String {
        var cpu = "unknown CPU"
        if let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("model name") }),
            let colon = line.firstIndex(of: ":")
        {
            cpu = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let memory = Double(ProcessInfo.processInfo.physicalMemory) / 1_073_741_824
        var system = utsname()
        uname(&system)
        let kernel = withUnsafeBytes(of: &system.release) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        return "\(cpu), \(cores) cores, \(String(format: "%.0f", memory)) GiB, Linux \(kernel)"
    }
}
