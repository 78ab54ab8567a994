import Foundation
import GPSDTestSupport
import LocationCore

/// A certificate authority made for one test with the real `openssl`, a server certificate it signed for
/// `localhost` and 127.0.0.1, and a second authority that signed nothing (a CA file that must not be trusted
/// for that server). EC keys, valid for two days.
struct TestCertificates: Sendable {
    let caFile: String
    let otherCAFile: String
    let serverCertificate: String
    let serverKey: String

    init(in directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        caFile = directory + "/ca.pem"
        otherCAFile = directory + "/other-ca.pem"
        serverCertificate = directory + "/server.pem"
        serverKey = directory + "/server.key"
        let extensions = directory + "/server.ext"
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
            .write(toFile: extensions, atomically: true, encoding: .utf8)
        let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try Self.openssl(["req", "-x509"] + key + ["-keyout", directory + "/ca.key", "-out", caFile, "-days", "2", "-subj", "/CN=swift-location test CA"])
        try Self.openssl(["req", "-x509"] + key + ["-keyout", directory + "/other-ca.key", "-out", otherCAFile, "-days", "2", "-subj", "/CN=another CA"])
        try Self.openssl(["req"] + key + ["-keyout", serverKey, "-out", directory + "/server.csr", "-subj", "/CN=localhost"])
        try Self.openssl([
            "x509", "-req", "-in", directory + "/server.csr", "-CA", caFile, "-CAkey", directory + "/ca.key",
            "-CAcreateserial", "-out", serverCertificate, "-days", "2", "-extfile", extensions,
        ])
        // The broker or server may run as another user than the test: the key must be readable by it.
        _ = chmod(serverKey, 0o644)
    }

    private static func openssl(_ arguments: [String]) throws {
        let result = try ChildProcess(["openssl"] + arguments).wait()
        guard result == .exited(0) else {
            throw LocationError(.sourceUnavailable, "openssl \(arguments.prefix(2).joined(separator: " ")) failed: \(result)")
        }
    }
}
