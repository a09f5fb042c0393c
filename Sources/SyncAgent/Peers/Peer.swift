import Discovery

/// A syncd node found on the LAN: a DNS-SD service whose TXT record names the node's
/// UUID, with what else the TXT says (database, TLS, certificate fingerprint).
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
    public var addresses: [ServiceAddress]
    /// The listener's TCP port.
    public var port: UInt16
    /// The TXT record, keys lowercased; the first of duplicate keys wins (RFC 6763 §6.4).
    public var txt: [String: String]

    /// Creates a peer value.
    public init(
        uuid: String, name: String, type: ServiceType, domain: String, hostName: String,
        addresses: [ServiceAddress], port: UInt16, txt: [String: String]
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

    /// The peer `service` announces; nil when its TXT names no UUID, or `ownUUID` (this node).
    public init?(_ service: ServiceInstance, excluding ownUUID: String? = nil) {
        guard let uuid = service.txt[TXTKey.uuid], !uuid.isEmpty, uuid != ownUUID else { return nil }
        self.init(
            uuid: uuid, name: service.name, type: service.type, domain: service.domain, hostName: service.hostName,
            addresses: service.addresses, port: service.port, txt: service.txt
        )
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

/// What discovery tells of syncd peers: ``PeerTable``'s reading of a browser's service events.
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
