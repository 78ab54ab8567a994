import Foundation
import LocationCore
import LocationGPX

// Writes the demo track: a 15-minute walk round the Neuer See in Berlin's Tiergarten, one fix per second,
// with the gentle noise of a real receiver. Deterministic: the same file every time.
//   demo-track OUTPUT.gpx

let arguments = CommandLine.arguments.dropFirst()
if arguments.first == "--help" || arguments.first == "-h" {
    print("usage: demo-track OUTPUT.gpx\n\nWrites the demo walk (15 minutes round the Neuer See in Berlin, one fix a second) as GPX.")
    exit(0)
}
guard arguments.count == 1, let output = arguments.first, !output.hasPrefix("-") else {
    FileHandle.standardError.write(Data("usage: demo-track OUTPUT.gpx\n".utf8))
    exit(64)
}

/// A small linear congruential generator, so the noise is the same on every machine.
struct SeededNoise {
    var state: UInt64
    mutating func next() -> Double {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Double(state >> 11) / Double(1 << 53) * 2 - 1
    }
}

let centre = (latitude: 52.5105, longitude: 13.3455)
let radius = 180.0  // metres
let seconds = 900
let start = Date(timeIntervalSince1970: 1_767_258_000)  // 2026-01-01T09:00:00Z
let metresPerDegree = 111_320.0
var noise = SeededNoise(state: 2947)
var previous: (Double, Double)?
do {
    let writer = try GPXWriter(path: output, creator: "swift-location demo-track")
    try writer.beginTrack(name: "Tiergarten walk")
    for second in 0...seconds {
        let angle = Double(second) / Double(seconds) * 2 * .pi
        let wobble = 1 + 0.08 * sin(angle * 5)
        let north = radius * wobble * cos(angle) + noise.next() * 0.25
        let east = radius * wobble * sin(angle) + noise.next() * 0.25
        let latitude = centre.latitude + north / metresPerDegree
        let longitude = centre.longitude + east / (metresPerDegree * cos(centre.latitude * .pi / 180))
        var speed: Double?
        var course: Double?
        if let (lastLatitude, lastLongitude) = previous {
            let dy = (latitude - lastLatitude) * metresPerDegree
            let dx = (longitude - lastLongitude) * metresPerDegree * cos(latitude * .pi / 180)
            speed = (dx * dx + dy * dy).squareRoot()
            course = (atan2(dx, dy) * 180 / .pi + 360).truncatingRemainder(dividingBy: 360)
        }
        previous = (latitude, longitude)
        let accuracy = 3.5 + abs(noise.next()) * 4 + (second % 300 < 20 ? 30 : 0)
        try writer.write(Location(
            latitude: latitude, longitude: longitude, altitude: 34 + 2 * sin(angle * 3), horizontalAccuracy: accuracy,
            verticalAccuracy: accuracy * 1.6, speed: speed, course: course,
            timestamp: start.addingTimeInterval(Double(second)), fixMode: .threeDimensional,
            satellitesUsed: 8 + Int(abs(noise.next()) * 4),
            // An HDOP in keeping with the accuracy, so that the walk as NMEA (whose readers take accuracy from
            // HDOP) keeps it.
            hdop: (accuracy / 5 * 10).rounded() / 10))
    }
    try writer.finish()
} catch {
    FileHandle.standardError.write(Data("demo-track: \(error)\n".utf8))
    exit(73)
}
