import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// Where the process serving a data directory listens, written to
/// `listener.json` once its socket is bound, so that other commands on the
/// same directory (`syncd pair`, `syncd id`) can tell clients where to go.
public struct ListenerRecord: Sendable, Codable, Equatable {
    /// The bound port.
    public var port: Int
    /// The bound host (`0.0.0.0` for all addresses).
    public var host: String
    /// Whether it serves HTTPS.
    public var tls: Bool

    /// A record of a listener bound to `host`:`port`.
    public init(port: Int, host: String, tls: Bool) {
        self.port = port
        self.host = host
        self.tls = tls
    }

    /// The URLs clients can use.
    public var urls: [String] {
        LocalAddresses.reachable(boundTo: host).map { "\(tls ? "https" : "http")://\(HostPort.join($0, port))" }
    }

    /// The address to put in an invitation: the bound host, or this machine's first LAN
    /// address when it is bound to all; `nil` when there is none.
    public var invitationHost: String? {
        ["::", "[::]", "0.0.0.0"].contains(host) ? LocalAddresses.lan().first : host
    }

    private static func path(_ directory: String) -> String { directory + "/listener.json" }

    /// Records the listener serving `directory`.
    public func save(in directory: String) throws {
        try StateFile<ListenerRecord>.writeAtomically(try JSONEncoder().encode(self), to: Self.path(directory), mode: 0o600)
    }

    /// The listener serving `directory`, if a process holds it and recorded one.
    public static func current(in directory: String) -> ListenerRecord? {
        guard DataDirectoryLock.isHeld(directory),
              let data = FileManager.default.contents(atPath: path(directory)) else { return nil }
        return try? JSONDecoder().decode(ListenerRecord.self, from: data)
    }

    /// Removes the record (the listener stopped).
    public static func remove(in directory: String) {
        unlink(path(directory))
    }
}
