import Discovery

/// A syncd node found on the LAN: a DNS-SD service whose TXT record names the node's
/// UUID. The service's fields read through (`peer.name`, `peer.addresses`, `peer.port`).
@dynamicMemberLookup
public struct Peer: Sendable, Hashable, Codable {
    /// The node's stable UUID from its TXT record; replication checkpoints are keyed by it.
    public let uuid: String
    /// The service that announces the node.
    public let service: ServiceInstance

    /// The peer `service` announces; nil when its TXT names no UUID, or `ownUUID` (this node).
    public init?(_ service: ServiceInstance, excluding ownUUID: String? = nil) {
        guard let uuid = service.txt[TXTKey.uuid], !uuid.isEmpty, uuid != ownUUID else { return nil }
        self.uuid = uuid
        self.service = service
    }

    /// A field of the service: `name`, `type`, `domain`, `hostName`, `addresses`, `port` or `txt`.
    public subscript<Value>(dynamicMember field: KeyPath<ServiceInstance, Value>) -> Value {
        service[keyPath: field]
    }

    private enum CodingKeys: String, CodingKey { case uuid }

    /// Reads one flat object: the service's fields and `uuid`, as ``encode(to:)`` writes it.
    public init(from decoder: any Decoder) throws {
        service = try ServiceInstance(from: decoder)
        uuid = try decoder.container(keyedBy: CodingKeys.self).decode(String.self, forKey: .uuid)
    }

    /// Writes one flat object, the service's fields and `uuid`, as `syncd browse --json` prints a peer.
    public func encode(to encoder: any Encoder) throws {
        try service.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(uuid, forKey: .uuid)
    }

    /// The database name the peer serves (`db`), if advertised.
    public var database: String? { service.txt[TXTKey.database] }
    /// Whether the peer's listener speaks HTTPS (`tls=1`).
    public var usesTLS: Bool { service.txt[TXTKey.tls] == "1" }
    /// The SHA-256 fingerprint of the peer's certificate (`fp`), to pin it when connecting.
    public var fingerprint: String? { service.txt[TXTKey.fingerprint] }
    /// The syncd protocol version the peer speaks (`proto`), if advertised.
    public var protocolVersion: Int? { service.txt[TXTKey.protocolVersion].flatMap { Int($0) } }
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
