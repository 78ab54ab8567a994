import Foundation
import LocationControl
import LocationCore
import LocationGPSD
import LocationService

/// The parsers of every input surface besides GPX, one fuzz target each, and the properties checked for
/// any bytes at all. A violated property is thrown as a ``PropertyViolation``; the fuzz target then stops
/// the process, which libFuzzer records as a crash with the input that caused it. A trap is a crash too.
public enum ParserFuzzHarness {
    /// The parsers.
    public enum Target: String, CaseIterable, Sendable {
        /// gpsd's JSON lines: the validator every line passes before libgps sees it.
        case gpsdJSON = "gpsd-json"
        /// Control requests, as the daemon reads them.
        case controlRequest = "control-request"
        /// Control replies, as `locationctl` reads them.
        case controlReply = "control-reply"
        /// The journal file's records.
        case journal
        /// The lifecycle state file beside the journal.
        case stateFile = "state-file"
        /// The YAML configuration's shape check.
        case yamlConfiguration = "yaml-config"
        /// Lifecycle scripts (`--lifecycle`).
        case lifecycleScript = "lifecycle-script"
        /// Event lines from locationd, as `watch`, `plot` and `DaemonLocationSource` read them.
        case eventLine = "event-line"
    }

    /// A property that does not hold, and how.
    public struct PropertyViolation: Error, CustomStringConvertible {
        public var description: String
    }

    /// A private scratch directory for the parsers that read files.
    public static let scratch: String = {
        let path = NSTemporaryDirectory() + "parser-fuzz-\(getpid())"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()

    /// Runs `target`'s parser on `bytes` and checks its properties.
    public static func check(_ target: Target, _ bytes: [UInt8]) throws(PropertyViolation) {
        func violated(_ text: String) -> PropertyViolation { PropertyViolation(description: "\(target.rawValue): \(text)") }
        switch target {
        case .gpsdJSON:
            let line = Array(bytes.prefix { $0 != 0x0A })
            let result = line.withUnsafeBufferPointer { JSONLineValidator.validate($0) }
            switch result {
            case .success(let members):
                for range in [members.className, members.time, members.mode, members.nonNumericCoordinate].compactMap({ $0 })
                where range.lowerBound < 0 || range.upperBound > line.count {
                    throw violated("a member range \(range) lies outside the \(line.count)-byte line")
                }
            case .failure(let failure):
                if failure.reason.isEmpty { throw violated("a refused line has no reason") }
                if failure.offset < 0 || failure.offset > line.count { throw violated("offset \(failure.offset) outside the line") }
            }
        case .controlRequest:
            try checkControlRequest(bytes, parse: ControlRequest.init(line:))
        case .controlReply:
            do {
                let reply = try ControlResponse(line: bytes)
                _ = try? reply.decode(Location.self, forKey: "location")
                _ = try? reply.decode(DaemonStatus.self, forKey: "status")
                _ = try? reply.decode(String.self, forKey: "state")
            } catch {
                if error.message.isEmpty { throw violated("a refused reply without a message") }
            }
        case .journal:
            let decoded = LocationJournal.decode(Data(bytes), path: "fuzz.journal")
            if decoded.validLength < 0 || decoded.validLength > max(bytes.count, 8) {
                throw violated("valid length \(decoded.validLength) of \(bytes.count) bytes")
            }
            // Each record is at least a length, a checksum and the fixed fields (mask, flags, 3 doubles).
            if decoded.locations.count * 35 > max(0, bytes.count - 8) {
                throw violated("\(decoded.locations.count) records from \(bytes.count) bytes")
            }
        case .stateFile:
            let journal = scratch + "/held.journal"
            if !FileManager.default.fileExists(atPath: journal) { _ = FileManager.default.createFile(atPath: journal, contents: Data()) }
            let file = LifecycleStateFile(journalPath: journal)
            _ = FileManager.default.createFile(atPath: file.path, contents: Data(bytes))
            if case .restored(let state) = file.load(), state == .notRunning { throw violated("restored notRunning") }
        case .yamlConfiguration:
            do {
                _ = try ConfigurationFileCheck.check(yaml: String(decoding: bytes, as: UTF8.self), path: "fuzz.yaml")
            } catch {
                if error.message.contains("\n") { throw violated("a message of several lines: \(error.message)") }
            }
        case .eventLine:
            // A line read as an event writes back as one line that reads as the same event.
            let frame: EventFrame?
            do throws(LocationError) { frame = try LocationEventDecoder.frameIfKnown(bytes) } catch {
                if error.message.isEmpty || error.code != .invalidData { throw violated("a bad refusal: \(error)") }
                return
            }
            guard let frame else { return }
            if case .locations(let locations, _) = frame.event, locations.isEmpty { throw violated("an empty locations event") }
            let line = JSONLineEncoder.line(frame)
            guard line.last == 0x0A, line.dropLast().allSatisfy({ $0 != 0x0A }) else {
                throw violated("\(frame) is written as other than one line")
            }
            let again: EventFrame?
            do throws(LocationError) { again = try LocationEventDecoder.frameIfKnown(Array(line.dropLast())) } catch {
                throw violated("\(frame) re-encodes as a line it refuses: \(error.message)")
            }
            if again != frame { throw violated("\(frame) re-encodes as \(String(describing: again))") }
        case .lifecycleScript:
            let script: LifecycleScript
            do throws(LocationError) { script = try LifecycleScript(parsing: String(decoding: bytes, as: UTF8.self)) } catch {
                if error.message.isEmpty || error.message.contains("\n") { throw violated("a bad message: \(error.message)") }
                return
            }
            let times = script.entries.map(\.time)
            if times != times.sorted() { throw violated("entries out of time order: \(times)") }
            if times.contains(where: { $0 < .zero }) { throw violated("a negative time") }
        }
    }

    /// The control-request properties, with `parse` as the parser: a refusal has a message, and a request
    /// re-encodes (``ControlRequest/jsonLine``) as a line that parses to the same request. ``check(_:_:)``
    /// passes `ControlRequest.init(line:)`; the tests pass parsers with a planted fault, to show that each
    /// property is checked.
    package static func checkControlRequest(
        _ bytes: [UInt8], parse: ([UInt8]) throws(ControlError) -> ControlRequest
    ) throws(PropertyViolation) {
        func violated(_ text: String) -> PropertyViolation {
            PropertyViolation(description: "\(Target.controlRequest.rawValue): \(text)")
        }
        let request: ControlRequest
        do throws(ControlError) { request = try parse(bytes) } catch {
            if error.message.isEmpty { throw violated("a refusal without a message") }
            return
        }
        let again: ControlRequest
        do throws(ControlError) { again = try parse(Array(request.jsonLine.dropLast())) } catch {
            throw violated("\(request) re-encodes as a line it refuses: \(error.message)")
        }
        if again != request { throw violated("\(request) re-encodes as \(again)") }
    }

    /// Small valid and invalid inputs for each target, taken from the tests' examples.
    public static func seeds(_ target: Target) -> [[UInt8]] {
        let texts: [String]
        switch target {
        case .gpsdJSON:
            texts = [
                #"{"class":"TPV","device":"/dev/ttyACM0","mode":3,"time":"2024-05-01T06:00:00.000Z","ept":0.005,"lat":52.520008,"lon":13.404954,"altHAE":82.0,"altMSL":35.0,"epx":3.0,"epy":4.0,"epv":9.0,"track":45.0,"speed":1.389,"climb":0.0,"eps":0.5}"#,
                #"{"class":"SKY","device":"/dev/ttyACM0","hdop":0.9,"vdop":1.2,"pdop":1.5,"satellites":[{"PRN":1,"used":true},{"PRN":2,"used":false}]}"#,
                #"{"class":"VERSION","release":"3.22","rev":"3.22","proto_major":3,"proto_minor":14}"#,
                #"{"class": "TPV", "mode": 3, "lat": "52.5"}"#, #"{"class":"TPV","mode":1e300}"#, #"{"class":"TPV","lat":NaN}"#,
                "[1,2,3]", "{{{{", "",
            ]
        case .controlRequest:
            texts = [
                #"{"command":"current","timeout":5,"accuracy":50}"#, #"{"command":"state","set":"suspended"}"#,
                #"{"command":"status"}"#, #"{"command":"watch"}"#, #"{"command":"current","timeout":1e300}"#, "null", "{}",
                #"{"command":"fly"}"#,
            ]
        case .controlReply:
            texts = [
                #"{"ok":true,"location":{"latitude":52.5,"longitude":13.4,"timestamp":"2024-05-01T06:00:00Z","isSimulated":false}}"#,
                #"{"ok":true,"state":"background","executingInBackground":true,"policy":"reduced"}"#,
                #"{"ok":false,"error":{"code":"no-fix","message":"no fix within 5 s"}}"#, #"{"ok":true}"#, "[]",
            ]
        case .journal:
            var bytes = Array("LOCJRNL1".utf8)
            for location in Self.sampleLocations { LocationJournal.encodeRecord(location, into: &bytes) }
            return [bytes, Array("LOCJRNL1".utf8), Array("not a journal".utf8)]
        case .stateFile:
            texts = [
                #"{"journal":"/tmp/held.journal","journalDevice":1,"journalInode":2,"state":"suspended","version":1}"#,
                #"{"version":2}"#, "garbage",
            ]
        case .yamlConfiguration:
            texts = [
                "gpsd:\n  host: localhost\n  port: 2947\nreduced:\n  interval: 60\n  accuracy: 100\nbackgroundLocation: on\n",
                "reduced: {intervall: 5}", "journal: [a, b]", "- a\n- b", "", "# only a comment\n", "reduced: 5",
            ]
        case .eventLine:
            texts = [
                #"{"type":"location","latitude":52.5,"longitude":13.4,"timestamp":"2024-05-01T06:00:00Z","isSimulated":false}"#,
                #"{"type":"batch","count":1,"reason":"foreground","id":"a.1","locations":[{"latitude":52.5,"longitude":13.4,"timestamp":"2024-05-01T06:00:00Z","isSimulated":false}]}"#,
                #"{"type":"state","state":"background","executingInBackground":true,"policy":"reduced","event":"didEnterBackground"}"#,
                #"{"type":"stopped","reason":"background-budget","elapsed":5.25,"budget":5,"message":"m"}"#,
                #"{"type":"stopped","reason":"background-task-expired","tasks":["a"],"message":"m"}"#,
                #"{"type":"source","status":"no-fix"}"#, #"{"type":"satellites","satellitesVisible":7}"#,
                #"{"type":"error","code":"batch-overflow","message":"m","dropped":3}"#, #"{"type":"policy","policy":"high"}"#,
                #"{"type":"weather"}"#, "{}", "[]",
            ]
        case .lifecycleScript:
            texts = ["120s:background,240s:suspended,480s:active", "0:active", "2m:background,1h:active", "soon:background", "99999999999999s:active", ""]
        }
        return texts.map { Array($0.utf8) }
    }

    public static let sampleLocations: [Location] = [
        Location(latitude: 52.52, longitude: 13.405, timestamp: Date(timeIntervalSince1970: 1_714_543_200)),
        Location(
            latitude: -33.9, longitude: 151.2, altitude: 12, horizontalAccuracy: 4.5, speed: 1.4, course: 90,
            timestamp: Date(timeIntervalSince1970: 1_714_543_201)),
    ]
}
