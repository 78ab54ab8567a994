import Foundation
import LocationControl
import LocationTesting
import Testing

import LocationDevSupport

/// Every parser besides GPX, on its seeds and thousands of deterministic mutations of them: each must
/// accept or refuse with a one-line reason, never trap. This runs in every test run without libFuzzer;
/// `scripts/fuzz` runs the coverage-guided targets (Fuzz/Sources/parser-fuzz) on the same seeds.
@Suite("Fuzzing every parser: gpsd lines, control requests and replies, journal, state file, YAML, lifecycle scripts")
struct ParserFuzzTests {
    static let tokens: [[UInt8]] = [
        "{", "}", "[", "]", "\"", ":", ",", "null", "true", "1e300", "-1", "NaN", "\\u0000", "\n", "\u{1B}", "s", "h", "ms",
        "LOCJRNL1", "- ", "  ", "#", "&a", "*a", "!!binary",
    ].map { Array($0.utf8) }

    static func mutate(_ input: [UInt8], _ random: inout SplitMix64) -> [UInt8] {
        var bytes = input
        for _ in 0..<(1 + Int(random.next() % 4)) {
            let position = bytes.isEmpty ? 0 : Int(random.next() % UInt64(bytes.count + 1))
            switch random.next() % 5 {
            case 0 where !bytes.isEmpty: bytes[min(position, bytes.count - 1)] ^= UInt8(truncatingIfNeeded: 1 << (random.next() % 8))
            case 1 where !bytes.isEmpty: bytes[min(position, bytes.count - 1)] = UInt8(truncatingIfNeeded: random.next())
            case 2: bytes.insert(contentsOf: tokens[Int(random.next() % UInt64(tokens.count))], at: position)
            case 3: bytes.removeSubrange(position...)
            default:
                if !bytes.isEmpty {
                    let start = Int(random.next() % UInt64(bytes.count))
                    let end = min(bytes.count, start + Int(random.next() % 64) + 1)
                    bytes.insert(contentsOf: Array(bytes[start..<end]), at: Int(random.next() % UInt64(bytes.count + 1)))
                }
            }
        }
        return bytes
    }

    @Test("seeds and 1,500 mutations per parser: accepted or refused with a reason, never a trap", arguments: ParserFuzzHarness.Target.allCases)
    func mutations(target: ParserFuzzHarness.Target) throws {
        let seeds = ParserFuzzHarness.seeds(target)
        #expect(seeds.count >= 3)
        var random = SplitMix64(seed: 0x7061_7273_6572 ^ UInt64(target.rawValue.utf8.count))
        for seed in seeds { try ParserFuzzHarness.check(target, seed) }
        for _ in 0..<1_500 {
            try ParserFuzzHarness.check(target, Self.mutate(seeds[Int(random.next() % UInt64(seeds.count))], &random))
        }
    }

    @Test("the harness catches what it is for: a request that does not re-encode to itself would be a violation")
    func harnessChecksRoundTrips() throws {
        // A valid request passes; the journal's own records decode; a lifecycle script out of order is refused
        // by the parser (so the harness never sees one).
        try ParserFuzzHarness.check(.controlRequest, Array(#"{"command":"current","timeout":2.5}"#.utf8))
        try ParserFuzzHarness.check(.journal, ParserFuzzHarness.seeds(.journal)[0])
        try ParserFuzzHarness.check(.lifecycleScript, Array("10s:background,5s:active".utf8))
        // Found by the mutations: an entry with a newline in it made an error message of two lines.
        try ParserFuzzHarness.check(.lifecycleScript, Array("10s:back\nground".utf8))
        // Found by the control-reply target: a failure reply with an empty message was refused without one.
        try ParserFuzzHarness.check(.controlReply, Array(#"{"ok":false,"error":{"code":"no-fix","message":""}}"#.utf8))
        // Found by the event-line target: an error code with an escaped quote was written back unescaped.
        try ParserFuzzHarness.check(.eventLine, Array(#"{"type":"error","code":"batch-ov\\\"x","message":"m"}"#.utf8))
        // And by the control-request target: a timeout of 1.70040224 s came back as 1.7004022400000003 s.
        try ParserFuzzHarness.check(.controlRequest, Array(#"{"command":"current","timeout":1.70040224}"#.utf8))

        // A parser with a planted fault must be reported, for each property: one that loses the timeout of the
        // line it reads back, one that refuses that line, and one that refuses without a reason.
        let line = Array(#"{"command":"current","timeout":2.5}"#.utf8)
        /// The real parser for the first line it reads (the input), `fault` for the next (the re-encoded line).
        func planted(
            _ fault: @escaping ([UInt8]) throws(ControlError) -> ControlRequest
        ) -> ([UInt8]) throws(ControlError) -> ControlRequest {
            var reads = 0
            return { bytes throws(ControlError) in
                reads += 1
                return reads == 1 ? try ControlRequest(line: bytes) : try fault(bytes)
            }
        }
        let changed = #expect(throws: ParserFuzzHarness.PropertyViolation.self) {
            try ParserFuzzHarness.checkControlRequest(line, parse: planted { _ throws(ControlError) in .current(timeout: nil, accuracy: nil) })
        }
        #expect(
            changed?.description == "control-request: \(ControlRequest.current(timeout: .seconds(2.5), accuracy: nil)) re-encodes as "
                + "\(ControlRequest.current(timeout: nil, accuracy: nil))")
        let refused = #expect(throws: ParserFuzzHarness.PropertyViolation.self) {
            try ParserFuzzHarness.checkControlRequest(line, parse: planted { _ throws(ControlError) in throw ControlError(.badRequest, "planted refusal") })
        }
        #expect(
            refused?.description == "control-request: \(ControlRequest.current(timeout: .seconds(2.5), accuracy: nil)) re-encodes as a line it "
                + "refuses: planted refusal")
        let unexplained = #expect(throws: ParserFuzzHarness.PropertyViolation.self) {
            try ParserFuzzHarness.checkControlRequest(line) { _ throws(ControlError) in throw ControlError(.badRequest, "") }
        }
        #expect(unexplained?.description == "control-request: a refusal without a message")
        // The real parser passes the same line.
        try ParserFuzzHarness.checkControlRequest(line, parse: ControlRequest.init(line:))
    }
}
