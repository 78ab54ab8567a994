// OnePosition: one position from gpsd, then exit.
//
//   swift run OnePosition [HOST:PORT] [--timeout SECONDS]     default localhost:2947, 30 s
//
// Connects to gpsd, waits for the first fix (or the best one seen within the timeout), prints one line
// and disconnects. On failure it prints the error and exits with the sysexits code for it: 69 when gpsd
// cannot be reached, 75 when no fix came in time, 64 for a bad argument.
import Foundation
import LocationCore
import LocationGPSD

func fail(_ message: String, _ status: Int32) -> Never {
    FileHandle.standardError.write(Data("OnePosition: \(message)\n".utf8))
    exit(status)
}

var endpoint = "localhost:2947"
var timeout = 30.0
var arguments = Array(CommandLine.arguments.dropFirst())
while let argument = arguments.first {
    arguments.removeFirst()
    if argument == "--timeout" {
        guard let value = arguments.first.flatMap(Double.init), value > 0, value <= 3600 else {
            fail("--timeout needs a number of seconds, 0 to 3600", 64)
        }
        arguments.removeFirst()
        timeout = value
    } else if !argument.hasPrefix("-") {
        endpoint = argument
    } else {
        fail("usage: OnePosition [HOST:PORT] [--timeout SECONDS]", 64)
    }
}
let parts = endpoint.split(separator: ":", omittingEmptySubsequences: false)
guard parts.count <= 2, let host = parts.first.map(String.init), !host.isEmpty,
    let port = parts.count == 2 ? Int(parts[1]) : 2947, (1...65535).contains(port)
else {
    fail("\(endpoint) is not HOST:PORT", 64)
}

do {
    let source = try GPSDLocationSource(configuration: .init(host: host, port: port))
    let location = try await source.currentLocation(timeout: .milliseconds(Int(timeout * 1000)))
    var line = String(format: "%.6f, %.6f", location.latitude, location.longitude)
    if let accuracy = location.horizontalAccuracy { line += String(format: " ±%.0f m", accuracy) }
    if let altitude = location.altitude { line += String(format: ", %.1f m", altitude) }
    print("\(line) at \(location.timestamp.formatted(.iso8601))")
} catch {
    switch error.code {
    case .sourceUnavailable, .sourceFailed: fail("\(error)", 69)
    case .noFix: fail("\(error)", 75)
    case .invalidConfiguration: fail("\(error)", 64)
    default: fail("\(error)", 70)
    }
}
