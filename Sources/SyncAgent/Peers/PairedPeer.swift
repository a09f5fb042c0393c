import FoundationEssentials

/// A member of this node's group: a node paired with here directly, or one a
/// member introduced (``introducedBy``). Who it is (its UUID and the ID its
/// certificate must have), what it is called, where it was last reached, and
/// the databases shared with it.
public struct PairedPeer: Sendable, Hashable, Codable {
    /// The peer's node UUID, as its certificate names it: the replication key.
    public var uuid: String
    /// The peer's node ID: the fingerprint its certificate must have.
    public var id: NodeID
    /// The name the peer is known by here: the one it gave itself (its host name
    /// unless configured), or, when another member had that one, it with a suffix (`B-2`).
    public var name: String
    /// The name the peer gave itself when another member had it, so that it is known by ``name`` here.
    public var calledItself: String?
    /// The name the peer knows this node by, when it is not this node's own (another of its peers had it).
    public var knownAs: String?
    /// Where the peer's listener was reached or said it listens (`host:port`), newest first.
    public var addresses: [String]
    /// The databases shared with the peer: it may replicate these, and no others.
    public var databases: [String]
    /// When the pairing was made (for an introduced peer: when its introducer paired with it).
    public var pairedAt: Date
    /// When the peer last made an authenticated request here, if ever.
    public var lastSeen: Date?
    /// Whether this pairing takes part in introductions (`syncd pair --no-introduce` keeps it
    /// private): the peer is introduced to other members, and its introductions followed.
    public var introduce: Bool
    /// The members that introduced this peer; empty for a peer paired with here directly.
    public var introducedBy: [NodeID]

    /// A peer paired now.
    public init(uuid: String, id: NodeID, name: String, addresses: [String], databases: [String], pairedAt: Date = Date(),
                introduce: Bool = true, introducedBy: [NodeID] = []) {
        self.uuid = uuid
        self.id = id
        self.name = name
        self.addresses = addresses
        self.databases = databases
        self.pairedAt = pairedAt
        self.introduce = introduce
        self.introducedBy = introducedBy
    }

    enum CodingKeys: String, CodingKey {
        case uuid, id, name, addresses, databases, introduce
        case pairedAt = "paired_at"
        case lastSeen = "last_seen"
        case introducedBy = "introduced_by"
        case calledItself = "called_itself"
        case knownAs = "known_as"
    }

    /// Reads a record, `introduce`, `introduced_by`, `called_itself` and `known_as` optional (files written before introductions lack them).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        uuid = try container.decode(String.self, forKey: .uuid)
        id = try container.decode(NodeID.self, forKey: .id)
        name = try container.decode(String.self, forKey: .name)
        addresses = try container.decode([String].self, forKey: .addresses)
        databases = try container.decode([String].self, forKey: .databases)
        pairedAt = try container.decode(Date.self, forKey: .pairedAt)
        lastSeen = try container.decodeIfPresent(Date.self, forKey: .lastSeen)
        introduce = try container.decodeIfPresent(Bool.self, forKey: .introduce) ?? true
        introducedBy = try container.decodeIfPresent([NodeID].self, forKey: .introducedBy) ?? []
        calledItself = try container.decodeIfPresent(String.self, forKey: .calledItself)
        knownAs = try container.decodeIfPresent(String.self, forKey: .knownAs)
    }

    /// The last address the peer was reached at.
    public var lastAddress: String? { addresses.first }

    /// Whether a member introduced the peer (rather than a person pairing it here).
    public var isIntroduced: Bool { !introducedBy.isEmpty }
}
