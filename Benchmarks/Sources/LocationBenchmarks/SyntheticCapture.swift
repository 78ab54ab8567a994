import Foundation

/// Writes a 10 Hz GGA + RMC capture with `epochs` epochs to a temporary file.
package func writeSyntheticCapture(epochs: Int) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("gpsd-bench-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).log")
    var text = ""
    func sentence(_ body: String) -> String {
        "$" + body + String(format: "*%02X", body.utf8.reduce(UInt8(0)) { $0 ^ $1 }) + "\r\n"
    }
    for epoch in 0..<epochs {
        let tenths = epoch
        let seconds = tenths / 10
        let time = String(format: "%02d%02d%02d.%02d", 6 + seconds / 3600, seconds / 60 % 60, seconds % 60, (tenths % 10) * 10)
        let latitude = 51.5 + Double(epoch) * 0.00001, longitude = 0.1 - Double(epoch) * 0.00001
        let lat = String(format: "%02d%07.4f", Int(latitude), (latitude - Double(Int(latitude))) * 60)
        let lon = String(format: "%03d%07.4f", Int(longitude), (longitude - Double(Int(longitude))) * 60)
        text += sentence("GPGGA,\(time),\(lat),N,\(lon),W,1,09,0.9,35.0,M,47.0,M,,")
        text += sentence("GPRMC,\(time),A,\(lat),N,\(lon),W,2.7,45.0,010524,,,A")
    }
    try text.write(to: url, atomically: true, encoding: .utf8)
    return url
}
