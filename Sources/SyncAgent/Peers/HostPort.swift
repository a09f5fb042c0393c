/// `host:port` text as peers' addresses are kept: IPv6 hosts in brackets.
enum HostPort {
    /// `host:port`, bracketing an IPv6 host.
    static func join(_ host: String, _ port: Int) -> String {
        (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
    }

    /// The host and port of `host:port` text; `nil` if it has no valid port.
    static func split(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
              (1...65535).contains(port) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { return nil }
        return (host, port)
    }

    /// `address` with its host replaced by `host`.
    static func replacingHost(of address: String, with host: String) -> String {
        guard let (_, port) = split(address) else { return address }
        return join(host, port)
    }
}
