import Foundation
import GPSDTestSupport
import Testing

@Suite("ExecutableLookup: finding the programs tests start")
struct ExecutableLookupTests {
    @Test("a name is found on PATH or in the system folders; a path is taken as it is")
    func lookup() throws {
        let sh = try #require(ExecutableLookup.path(of: "sh"))
        #expect(sh.hasPrefix("/") && sh.hasSuffix("/sh"))
        #expect(ExecutableLookup.path(of: "/bin/sh") == "/bin/sh")
    }

    @Test("what is missing, not executable or a folder is not found")
    func missing() throws {
        #expect(ExecutableLookup.path(of: "no-such-program-for-gpsd-tests") == nil)
        #expect(ExecutableLookup.path(of: "/bin") == nil)
        let plain = NSTemporaryDirectory() + "lookup-\(UUID().uuidString)"
        try #require(FileManager.default.createFile(atPath: plain, contents: Data("#!/bin/sh\n".utf8), attributes: [.posixPermissions: 0o644]))
        defer { try? FileManager.default.removeItem(atPath: plain) }
        #expect(ExecutableLookup.path(of: plain) == nil)
    }
}
