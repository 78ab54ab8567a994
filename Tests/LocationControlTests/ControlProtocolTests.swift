import Foundation
import LocationCore
import Testing

@testable import LocationControl

@Suite("Control protocol encoding")
struct ControlProtocolTests {
    @Test func decodesEveryCommand() throws {
        #expect(try ControlRequest(line: Array(#"{"command":"current","timeout":5,"accuracy":50}"#.utf8))
            == .current(timeout: .seconds(5), accuracy: 50))
        #expect(try ControlRequest(line: Array(#"{"command":"current"}"#.utf8)) == .current(timeout: nil, accuracy: nil))
        #expect(try ControlRequest(line: Array(#"{"command":"current","timeout":2.5}"#.utf8))
            == .current(timeout: .milliseconds(2500), accuracy: nil))
        #expect(try ControlRequest(line: Array(#"{"command":"state"}"#.utf8)) == .state(set: nil))
        #expect(try ControlRequest(line: Array(#"{"command":"state","set":"background"}"#.utf8))
            == .state(set: "background"))
        #expect(try ControlRequest(line: Array(#"{ "command" : "status" }"#.utf8)) == .status)
        #expect(try ControlRequest(line: Array("{\"command\":\"watch\"}\r".utf8)) == .watch)
    }

    @Test func encodedRequestsDecodeBackToThemselves() throws {
        let requests: [ControlRequest] = [
            .current(timeout: .seconds(5), accuracy: 50), .current(timeout: .milliseconds(1500), accuracy: nil),
            .current(timeout: nil, accuracy: 12.5), .current(timeout: ValueRange.duration(clampingSeconds: 1.70040224), accuracy: nil), .state(set: nil), .state(set: "suspended"), .status, .watch,
            .sky(after: 0), .sky(after: 12),
            .monitorRegion(try CircularRegion(identifier: "home \"1\"", latitude: 52.52, longitude: 13.405, radius: 150, loiteringDelay: .seconds(60))),
            .monitorRegion(try CircularRegion(identifier: "x", latitude: -90, longitude: 180, radius: 0)),
            .stopMonitoringRegion("home"), .regions,
        ]
        for request in requests {
            let line = request.jsonLine
            #expect(line.last == UInt8(ascii: "\n"))
            #expect(try ControlRequest(line: line.dropLast()) == request)
        }
        #expect(String(decoding: ControlRequest.current(timeout: .seconds(5), accuracy: 50).jsonLine, as: UTF8.self)
            == "{\"command\":\"current\",\"timeout\":5,\"accuracy\":50}\n")
    }

    @Test(arguments: [
        ("{\"command\":", "bad-request"),
        ("[1,2]", "bad-request"),
        ("\"status\"", "bad-request"),
        ("{\"command\":\"current\",\"timeout\":\"soon\"}", "bad-request"),
        ("{\"command\":\"current\",\"timeout\":-1}", "bad-request"),
        ("{\"command\":\"current\",\"accuracy\":0}", "bad-request"),
        ("{\"command\":\"current\",\"timeout\":1e300}", "bad-request"),
        ("{\"command\":\"current\",\"timeout\":9.3e18}", "bad-request"),
        ("{\"command\":\"current\",\"timeout\":86400.001}", "bad-request"),
        ("{\"command\":\"current\",\"accuracy\":1e300}", "bad-request"),
        ("{\"command\":\"current\",\"accuracy\":-1e-300}", "bad-request"),
        ("{\"command\":42}", "bad-request"),
        ("{\"command\":\"state\",\"set\":\"\"}", "bad-request"),
        ("{\"command\":\"sky\",\"after\":-1}", "bad-request"),
        ("{\"command\":\"sky\",\"after\":1.5}", "bad-request"),
        ("{\"command\":\"sky\",\"after\":1e300}", "bad-request"),
        ("{\"command\":\"sky\",\"after\":\"7\"}", "bad-request"),
        ("{\"command\":\"sky\",\"app\":\"x\"}", "bad-request"),
        ("{\"command\":\"region\"}", "bad-request"),
        ("{\"command\":\"region\",\"remove\":\"\"}", "bad-request"),
        ("{\"command\":\"region\",\"remove\":null}", "bad-request"),
        ("{\"command\":\"region\",\"remove\":\"a\",\"add\":{\"identifier\":\"a\",\"latitude\":1,\"longitude\":1,\"radius\":1}}", "bad-request"),
        ("{\"command\":\"region\",\"add\":{\"identifier\":\"a\",\"latitude\":91,\"longitude\":1,\"radius\":1}}", "bad-request"),
        ("{\"command\":\"region\",\"add\":{\"identifier\":\"a\",\"latitude\":1,\"longitude\":1,\"radius\":1e999}}", "bad-request"),
        ("{\"command\":\"region\",\"add\":{\"identifier\":\"a\",\"latitude\":1,\"longitude\":1}}", "bad-request"),
        ("{\"command\":\"region\",\"add\":{\"identifier\":\"a\",\"latitude\":1,\"longitude\":1,\"radius\":1,\"loiteringDelay\":-1}}", "bad-request"),
        ("{\"command\":\"regions\",\"add\":1}", "bad-request"),
        ("{\"command\":\"region\",\"add\":{\"identifier\":\"a\",\"latitude\":1,\"longitude\":1,\"radius\":1,\"loiteringdelay\":60}}", "bad-request"),
        ("{\"command\":\"region\",\"add\":{\"identifier\":\"a\",\"latitude\":1,\"longitude\":1,\"radius\":1,\"loiteringDelay\":null}}", "bad-request"),
        ("{\"command\":\"region\",\"add\":[]}", "bad-request"),
        ("{}", "unknown-command"),
        ("{\"command\":\"fly\"}", "unknown-command"),
    ])
    func rejectsInvalidRequests(line: String, code: String) {
        #expect {
            try ControlRequest(line: Array(line.utf8))
        } throws: { error in
            (error as? ControlError)?.code.rawValue == code
        }
    }

    @Test("a current request's timeout out of range names the field, the value and the range")
    func outOfRangeTimeoutIsNamed() {
        do {
            _ = try ControlRequest(line: Array(#"{"command":"current","timeout":1e300}"#.utf8))
            Issue.record("a timeout of 1e300 s was accepted")
        } catch {
            #expect(error.message == "\"timeout\": 1e300 is above the largest allowed value; use 0…86400 s")
        }
    }

    @Test("a null request says that the request is null, not that some field is")
    func nullRequestIsNamed() {
        do {
            _ = try ControlRequest(line: Array("null".utf8))
            Issue.record("null was accepted")
        } catch {
            #expect(error.message == #"request is null; expected a JSON object such as {"command":"status"}"#)
        }
    }

    @Test func unknownCommandIsNamed() {
        let error = #expect(throws: ControlError.self) { try ControlRequest(line: Array(#"{"command":"fly"}"#.utf8)) }
        #expect(error?.code == .unknownCommand)
        #expect(error?.message.hasPrefix(#"unknown command "fly"; expected one of "#) == true, "\(String(describing: error))")
    }

    @Test func invalidUTF8IsABadRequest() {
        #expect {
            try ControlRequest(line: [0x7B, 0xFF, 0x7D])
        } throws: { ($0 as? ControlError)?.code == .badRequest }
    }

    @Test func replyShapes() throws {
        #expect(ControlReply.state(.background, executingInBackground: true, policy: .reduced).text
            == #"{"ok":true,"state":"background","executingInBackground":true,"policy":"reduced"}"#)
        #expect(ControlReply.watching.text == #"{"ok":true,"watching":true}"#)
        #expect(ControlReply.failure(.badRequest, "line \"2\"\nbroken").text
            == #"{"ok":false,"error":{"code":"bad-request","message":"line \"2\"\nbroken"}}"#)
        #expect(ControlReply.failure(LocationError(.noFix, "none")).text
            == #"{"ok":false,"error":{"code":"no-fix","message":"none"}}"#)
        #expect(ControlReply.status(json: Array("{\n  \"a\": 1,\r\n  \"b\": [2]\n}\n".utf8)).text
            == #"{"ok":true,"status":{   "a": 1,    "b": [2] }}"#)
        #expect(ControlReply.status(json: Array("[1]".utf8)).isSuccess == false)

        struct Fields: Encodable { var journal = "/var/lib/locationd/journal" }
        #expect(ControlReply.success(Fields()).text == #"{"ok":true,"journal":"/var/lib/locationd/journal"}"#)
        struct Empty: Encodable {}
        #expect(ControlReply.success(Empty()).text == #"{"ok":true}"#)

        let location = ControlReply.location(ControlFixtures.location)
        #expect(location.line.last == UInt8(ascii: "\n"))
        #expect(location.line.dropLast().contains(UInt8(ascii: "\n")) == false)
        let response = try ControlResponse(line: Array(location.line.dropLast()))
        #expect(try response.decode(Location.self, forKey: "location") == ControlFixtures.location)
        #expect(location.text.hasPrefix(#"{"ok":true,"location":{"latitude":"#))
        #expect(location.text.contains(#""time":1714543200,"timestamp":"2024-05-01T06:00:00.000Z""#))
    }

    @Test("a location has one JSON encoding: the current reply, the status reply and a watch event carry the same bytes")
    func oneLocationEncoding() throws {
        let fix = ControlFixtures.location
        let object = String(decoding: JSONLineEncoder.object(fix), as: UTF8.self)
        #expect(ControlReply.location(fix).text == #"{"ok":true,"location":"# + object + "}")
        let event = String(decoding: JSONLineEncoder.line(.locations([fix], .live)), as: UTF8.self)
        #expect(event == #"{"type":"location","# + object.dropFirst() + "\n")
        let status = DaemonStatus(
            state: .active, executingInBackground: false, policy: .high, source: "replay", sourceStatus: .hasFix,
            lastFix: fix, lastFixAge: 0.5, held: 0, dropped: 0, journal: nil, watchers: 0, uptime: 1)
        let reply = ControlReply.status(status)
        #expect(reply.text.hasPrefix(#"{"ok":true,"status":{"lastFix":"# + object + ","))
        let decoded = try ControlResponse(line: Array(reply.line.dropLast())).decode(DaemonStatus.self, forKey: "status")
        #expect(decoded == status)
    }

    @Test func failureRepliesBecomeTheirErrors() {
        #expect {
            try ControlResponse(line: Array(ControlReply.failure(LocationError(.noFix, "no fix in 5 s")).line.dropLast()))
        } throws: { error in
            let error = error as? ControlError
            return error?.code.rawValue == "no-fix" && error?.message == "no fix in 5 s"
        }
        #expect {
            try ControlResponse(line: Array("{\"type\":\"location\"}".utf8))
        } throws: { ($0 as? ControlError)?.code == .protocolError }
        #expect {
            try ControlResponse(line: Array("not json".utf8))
        } throws: { ($0 as? ControlError)?.code == .protocolError }
    }

    @Test func socketErrorsAreClassified() {
        #expect(ControlError.system("bind", path: "/run/locationd/s", errno: EACCES).code == .permissionDenied)
        #expect(ControlError.system("bind", path: "/run/locationd/s", errno: EACCES).message
            .contains("/run/locationd/s"))
        #expect(ControlError.system("connect to", path: "/x", errno: ECONNREFUSED).code == .notListening)
        #expect(ControlError.system("bind", path: "/x", errno: EIO).code == .io)
    }
}

@Suite("Control requests: what a command does not take is refused")
struct RequestKeyTests {
    @Test("a key the command does not take, or a null value, is a bad request naming the key; the known keys still work",
          arguments: [
            (#"{"command":"state","state":"suspended"}"#, #""state" takes no "state"; it takes "set""#),
            (#"{"command":"state","set":null}"#, #""set" must not be null; leave it out instead"#),
            (#"{"command":"status","verbose":true}"#, #""status" takes no "verbose"; it takes no other key"#),
            (#"{"command":"current","timeout":5,"acuracy":3}"#, #""current" takes no "acuracy"; it takes "timeout", "accuracy" and "maxAge""#),
          ])
    func unknownKeysAreRefused(line: String, message: String) {
        #expect {
            try ControlRequest(line: Array(line.utf8))
        } throws: { error in
            (error as? ControlError)?.code == .badRequest && (error as? ControlError)?.message == message
        }
    }

    @Test("every request locationctl sends is accepted as it is")
    func clientRequestsRoundTrip() throws {
        let requests: [ControlRequest] = [
            .current(timeout: .seconds(5), accuracy: 20), .current(timeout: nil, accuracy: nil), .state(set: "background"),
            .state(set: nil), .status, .watch, .sky(after: 3),
        ]
        for request in requests {
            #expect(try ControlRequest(line: request.jsonLine.dropLast()) == request)
        }
    }
}
