import Foundation
import LocationCore
import LocationDevSupport
import LocationTesting

#if canImport(Glibc)
    import Glibc
#endif

/// The benchmark's input: a GPX 1.1 track of a random walk with `<ele>` and `<time>`, the same for a seed.
package enum GPXBenchFile {
    /// The default seed of every generated input.
    package static let defaultSeed: UInt64 = 20_240_501

    /// Writes `points` track points generated from `seed` to `path`; returns the number of bytes written.
    @discardableResult
    package static func generate(path: String, points: Int, seed: UInt64 = defaultSeed) throws -> Int {
        guard let file = fopen(path, "w") else { throw BenchError("cannot create \(path)") }
        defer { fclose(file) }
        var random = SplitMix64(seed: seed)
        var out: [UInt8] = []
        out.reserveCapacity(1 << 20)
        func flush() {
            out.withUnsafeBytes { _ = fwrite($0.baseAddress, 1, $0.count, file) }
            out.removeAll(keepingCapacity: true)
        }
        out.append(
            contentsOf: """
                <?xml version="1.0" encoding="UTF-8"?>
                <gpx version="1.1" creator="gpx-bench" xmlns="http://www.topografix.com/GPX/1/1">
                  <trk>
                    <name>gpx-bench seed \(seed)</name>
                    <trkseg>

                """.utf8)
        var latitude = 47.3769, longitude = 8.5417, elevation = 408.0
        var time = Date(timeIntervalSince1970: 1_714_543_200)  // 2024-05-01T06:00:00Z
        var total = 0
        for index in 0..<points {
            latitude += (random.unit() - 0.5) * 0.0002
            longitude += (random.unit() - 0.5) * 0.0003
            elevation += (random.unit() - 0.5) * 2
            // 1 Hz, with a tenth of a second now and then, as phones write.
            time += random.next() % 10 == 0 ? 1.1 : 1
            out.append(contentsOf: "      <trkpt lat=\"".utf8)
            appendFixed(latitude, digits: 7, to: &out)
            out.append(contentsOf: "\" lon=\"".utf8)
            appendFixed(longitude, digits: 7, to: &out)
            out.append(contentsOf: "\">\n        <ele>".utf8)
            appendFixed(elevation, digits: 2, to: &out)
            out.append(contentsOf: "</ele>\n        <time>".utf8)
            TimestampProbe.append(time, to: &out)
            out.append(contentsOf: "</time>\n      </trkpt>\n".utf8)
            if index % 8192 == 0 {
                total += out.count
                flush()
            }
        }
        out.append(contentsOf: "    </trkseg>\n  </trk>\n</gpx>\n".utf8)
        total += out.count
        flush()
        guard ferror(file) == 0 else { throw BenchError("cannot write \(path)") }
        return total
    }

    private static func appendFixed(_ value: Double, digits: Int, to out: inout [UInt8]) {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        var scaled = Int((abs(value) * scale).rounded())
        if value < 0, scaled != 0 { out.append(0x2D) }
        var divisor = 1
        for _ in 0..<digits { divisor *= 10 }
        out.append(contentsOf: String(scaled / divisor).utf8)
        if digits > 0 {
            out.append(0x2E)
            scaled %= divisor
            var fraction = [UInt8](repeating: 0x30, count: digits)
            for i in stride(from: digits - 1, through: 0, by: -1) {
                fraction[i] = UInt8(0x30 + scaled % 10)
                scaled /= 10
            }
            out.append(contentsOf: fraction)
        }
    }
}
