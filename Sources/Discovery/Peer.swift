/// A syncd node found on the LAN: who it is (UUID), where it listens and what it advertises.
public struct Peer: Sendable, Hashable, Codable {
    /// The node's stable UUID from its TXT record; replication checkpoints are keyed by it.
    public var uuid: String
    /// The DNS-SD instance name, e.g. `syncd on alpha (1b4e28ba)`.
    public var name: String
    /// The service type it was found under.
    public var type: ServiceType
    /// The DNS-SD domain, normally `local`.
    public var domain: String
    /// The mDNS host name the service points at, e.g. `alpha.local`.
    public var hostName: String
    /// Every address the peer was resolved to, IPv4 first; link-local IPv6 carries its interface.
    public var addresses: [PeerAddress]
    /// The listener's TCP port.
    public var port: UInt16
    /// The TXT record, keys lowercased; the first of duplicate keys wins (RFC 6763 §6.4).
    public var txt: [String: String]

    /// Creates a peer value.
    public init(
        uuid: String, name: String, type: ServiceType, domain: String, hostName: String,
        addresses: [PeerAddress], port: UInt16, txt: [String: String]
    ) {
        self.uuid = uuid
        self.name = name
        self.type = type
        self.domain = domain
        self.hostName = hostName
        self.addresses = addresses
        self.port = port
        self.txt = txt
    }

    /// The database name the peer serves (`db`), if advertised.
    public var database: String? { txt[TXTKey.database] }
    /// Whether the peer's listener speaks HTTPS (`tls=1`).
    public var usesTLS: Bool { txt[TXTKey.tls] == "1" }
    /// The SHA-256 fingerprint of the peer's certificate (`fp`), to pin it when connecting.
    public var fingerprint: String? { txt[TXTKey.fingerprint] }
    /// The syncd protocol version the peer speaks (`proto`), if advertised.
    public var protocolVersion: Int? { txt[TXTKey.protocolVersion].flatMap { Int($0) } }
}

/// One address a peer was resolved to.
public struct PeerAddress: Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
    /// The address family.
    public enum Family: String, Sendable, Hashable, Codable {
        /// IPv4.
        case ipv4
        /// IPv6.
        case ipv6
    }

    /// The address family.
    public var family: Family
    /// The address in text form without interface scope, e.g. `10.0.0.2` or `fe80::1`.
    public var ip: String
    /// The local interface it was seen on; a link-local IPv6 address is usable only through it.
    public var interfaceIndex: Int32
    /// The local interface's name (e.g. `eth0`), when it still exists.
    public var interfaceName: String?

    /// Creates an address value.
    public init(family: Family, ip: String, interfaceIndex: Int32, interfaceName: String?) {
        self.family = family
        self.ip = ip
        self.interfaceIndex = interfaceIndex
        self.interfaceName = interfaceName
    }

    /// Whether this is an IPv6 link-local address (fe80::/10), which needs its interface scope.
    public var isLinkLocal: Bool {
        guard family == .ipv6, let first = ip.split(separator: ":").first, let word = UInt16(first, radix: 16) else {
            return false
        }
        return word & 0xFFC0 == 0xFE80
    }

    /// The host to connect to: the IP, with `%interface` appended for link-local IPv6.
    public var host: String {
        guard isLinkLocal else { return ip }
        return "\(ip)%\(interfaceName ?? String(interfaceIndex))"
    }

    /// The host as written in a URL: IPv6 in brackets, the scope's `%` escaped (RFC 6874).
    public var urlHost: String {
        switch family {
        case .ipv4: ip
        case .ipv6: isLinkLocal ? "[\(ip)%25\(interfaceName ?? String(interfaceIndex))]" : "[\(ip)]"
        }
    }

    /// The host to connect to.
    public var description: String { host }

    /// IPv4 before IPv6, then by text, then by interface: a stable order for display and comparison.
    public static func < (lhs: PeerAddress, rhs: PeerAddress) -> Bool {
        if lhs.family != rhs.family { return lhs.family == .ipv4 }
        if lhs.ip != rhs.ip { return lhs.ip < rhs.ip }
        return lhs.interfaceIndex < rhs.interfaceIndex
    }
}

/// What a ``Browser`` reports about peers of its service type.
public enum PeerEvent: Sendable, Hashable {
    /// A peer was found and resolved.
    case appeared(Peer)
    /// A known peer's addresses, port or TXT changed; carries the new value.
    case changed(Peer)
    /// A peer withdrew its advertisement (or this node lost its view of the LAN); carries the last value.
    case gone(Peer)

    /// The peer the event is about.
    public var peer: Peer {
        switch self {
        case .appeared(let peer), .changed(let peer), .gone(let peer): peer
        }
    }
}
