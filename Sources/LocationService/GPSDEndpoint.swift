import LocationCore

#if canImport(Glibc)
    import Glibc
#endif

/// A gpsd address given as `HOST[:PORT]`: `localhost`, `gps.local:2948`, `192.168.1.5`, `[::1]:2947`.
package struct GPSDEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// The host name or address (without brackets).
    package var host: String
    /// The TCP port; 2947 when not given.
    package var port: Int

    /// Creates an endpoint.
    package init(host: String = "localhost", port: Int = 2947) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST[:PORT]`; throws ``LocationError/Code/invalidConfiguration`` saying what is wrong.
    package init(parsing text: String) throws(LocationError) {
        func bad(_ reason: String) -> LocationError {
            LocationError(.invalidConfiguration, "gpsd address '\(text)': \(reason); use HOST[:PORT], such as localhost:2947")
        }
        var host = Substring(text)
        var portText: Substring?
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { throw bad("unclosed '['") }
            let rest = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { throw bad("unexpected text after ']'") }
                portText = rest.dropFirst()
            }
        } else if host.filter({ $0 == ":" }).count == 1, let colon = host.firstIndex(of: ":") {
            portText = host[host.index(after: colon)...]
            host = host[..<colon]
        }
        guard !host.isEmpty else { throw bad("the host is empty") }
        guard !host.contains(where: { $0.isWhitespace }) else { throw bad("the host contains spaces") }
        // More than one colon is an IPv6 address, or a mistake such as host:1:2.
        if host.contains(":") {
            var address = in6_addr()
            // A link-local address may carry its interface (fe80::1%eth0), which inet_pton does not read.
            let address6 = host.split(separator: "%", maxSplits: 1).first.map(String.init) ?? ""
            guard inet_pton(AF_INET6, address6, &address) == 1 else {
                throw bad("'\(host)' is not an IPv6 address (an IPv6 address with a port goes in brackets: [::1]:2947)")
            }
        }
        var port = 2947
        if let portText {
            guard let value = Int(portText), (1...65_535).contains(value) else {
                throw bad("port '\(portText)' is not a number in 1...65535")
            }
            port = value
        }
        self.host = String(host)
        self.port = port
    }

    /// `host:port`, with brackets around IPv6 addresses.
    package var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
