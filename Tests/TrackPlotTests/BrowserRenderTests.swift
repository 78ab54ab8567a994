import Foundation
import Testing
import TrackPlot

/// Renders a plot in a real headless browser and checks the pixels: the picture is not blank and the
/// track's corners are drawn in the track colour where the projection puts them.
@Suite struct BrowserRenderTests {
    static let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }
    static let runsAnyway = ProcessInfo.processInfo.environment["CI"] == "true"

    /// Runs a program and returns its standard output; throws with its standard error when it fails.
    private func run(_ program: String, _ arguments: [String]) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let problem = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BrowserTestError("\(program) exited \(process.terminationStatus): \(String(decoding: problem.suffix(2000), as: UTF8.self))")
        }
        return data
    }

    struct BrowserTestError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// Decodes an 8-bit RGB or RGBA PNG (with python3's zlib) and prints the pixels asked for and the count
    /// of pixels that are not the page's white.
    static let pngProbe = #"""
        import json, struct, sys, zlib
        data = open(sys.argv[1], 'rb').read()
        assert data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
        pos, idat = 8, b''
        while pos < len(data):
            length, kind = struct.unpack('>I4s', data[pos:pos + 8])
            body = data[pos + 8:pos + 8 + length]
            if kind == b'IHDR':
                width, height, depth, colour = struct.unpack('>IIBB', body[:10])
            elif kind == b'IDAT':
                idat += body
            pos += 12 + length
        assert depth == 8 and colour in (2, 6), 'unsupported PNG %d/%d' % (depth, colour)
        channels = 3 if colour == 2 else 4
        raw, stride = zlib.decompress(idat), width * channels
        rows, previous, at = [], bytearray(stride), 0
        for _ in range(height):
            kind, line = raw[at], bytearray(raw[at + 1:at + 1 + stride])
            at += 1 + stride
            for i in range(stride):
                a = line[i - channels] if i >= channels else 0
                b, c = previous[i], previous[i - channels] if i >= channels else 0
                if kind == 1: line[i] = (line[i] + a) & 255
                elif kind == 2: line[i] = (line[i] + b) & 255
                elif kind == 3: line[i] = (line[i] + (a + b) // 2) & 255
                elif kind == 4:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            rows.append(line)
            previous = line
        def pixel(x, y):
            return list(rows[y][x * channels:x * channels + 3])
        inked = sum(1 for row in rows for x in range(width) if row[x * channels:x * channels + 3] != bytearray(b'\xff\xff\xff'))
        points = json.loads(sys.argv[2])
        print(json.dumps({'width': width, 'height': height, 'inked': inked, 'pixels': [pixel(x, y) for x, y in points]}))
        """#

    struct Probe: Decodable {
        var width: Int, height: Int, inked: Int, pixels: [[Int]]
    }

    @Test(.enabled(
        if: chromium != nil || runsAnyway,
        "chromium is not installed (scripts/install-deps installs it); with CI=true this test runs and fails without it"))
    func anOpenSquareIsDrawnWithItsCornersInTheTrackColourWhereTheProjectionPutsThem() throws {
        let chromium = try #require(Self.chromium, "chromium is not installed: run scripts/install-deps")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("plot-browser-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        // South-west, north-west, north-east, south-east: an open square, 20 points per side.
        let corners = [(0.0, 0.0), (0.002, 0.0), (0.002, 0.002), (0.0, 0.002)]
        var items: [PlotItem] = []
        var time = 0.0
        for side in 0..<3 {
            let (a, b) = (corners[side], corners[side + 1])
            for step in 0..<20 {
                let t = Double(step) / 20
                items.append(PlotFixtures.point(a.0 + (b.0 - a.0) * t, a.1 + (b.1 - a.1) * t, time))
                time += 1
            }
        }
        items.append(PlotFixtures.point(corners[3].0, corners[3].1, time))
        let (width, height) = (600, 500)
        let svg = try PlotFixtures.svg(items, name: "square", width: Double(width), height: Double(height))
        let svgURL = directory.appendingPathComponent("square.svg"), pngURL = directory.appendingPathComponent("square.png")
        try svg.write(to: svgURL, atomically: true, encoding: .utf8)
        // `timeout` ends a browser that hangs, so the test fails instead of waiting for ever.
        _ = try run("/usr/bin/timeout", [
            "120", chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--force-device-scale-factor=1",
            "--user-data-dir=\(directory.appendingPathComponent("profile").path)",
            "--screenshot=\(pngURL.path)", "--window-size=\(width),\(height)", svgURL.absoluteString,
        ])

        let frame = PlotFrame(summary: PlotFixtures.summary(items), width: Double(width), height: Double(height))
        func at(_ latitude: Double, _ longitude: Double) -> [Int] {
            let pixel = frame.pixel(latitude: latitude, unwrappedLongitude: longitude)
            return [Int(pixel.x.rounded(.down)), Int(pixel.y.rounded(.down))]
        }
        let northWest = at(0.002, 0), northEast = at(0.002, 0.002), northMiddle = at(0.002, 0.001), westMiddle = at(0.001, 0)
        let inside = at(0.001, 0.001), start = at(0, 0), end = at(0, 0.002)
        let points = [northWest, northEast, northMiddle, westMiddle, inside, start, end]
        let script = directory.appendingPathComponent("probe.py")
        try Self.pngProbe.write(to: script, atomically: true, encoding: .utf8)
        let json = try run("/usr/bin/python3", [script.path, pngURL.path, String(decoding: try JSONEncoder().encode(points), as: UTF8.self)])
        let probe = try JSONDecoder().decode(Probe.self, from: json)

        #expect(probe.width == width && probe.height == height)
        #expect(probe.inked > width * height / 2, "the picture is blank: \(probe.inked) pixels are not white")
        func isClose(_ pixel: [Int], _ colour: [Int], within tolerance: Int = 40) -> Bool {
            zip(pixel, colour).allSatisfy { abs($0 - $1) <= tolerance }
        }
        let track = [0x1f, 0x5f, 0xbf]
        for (name, index) in [("north-west corner", 0), ("north-east corner", 1), ("north side", 2), ("west side", 3)] {
            #expect(isClose(probe.pixels[index], track), "\(name) at \(points[index]) is \(probe.pixels[index]), not the track colour")
        }
        #expect(isClose(probe.pixels[4], [0xf7, 0xf7, 0xf4], within: 6), "inside the square at \(inside) should be the plot background")
        #expect(isClose(probe.pixels[5], [0x2e, 0x7d, 0x32]), "the start marker is green at \(start)")
        #expect(isClose(probe.pixels[6], [0x22, 0x22, 0x22]), "the end marker is dark at \(end)")
    }
}
