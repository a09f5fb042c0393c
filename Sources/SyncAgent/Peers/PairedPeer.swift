import Foundation

/// A node this one is paired with: who it is (its UUID and the ID its
/// certificate must have), what it is called, where it was last reached, and
/// the databases shared with it.
public struct PairedPeer: Sendable, Hashable, Codable {
    /// The peer's node UUID, as its certificate names it: the replication key.
    public var uuid: String
    /// The peer's node ID: the fingerprint its certificate must have.
    public var id: NodeID
    /// The name the peer gave itself (its host name unless configured).
    public var name: String
    /// Where the peer's listener was reached or said it listens (`host:port`), newest first.
    public var addresses: [String]
    /// The databases shared with the peer: it may replicate these, and no others.
    public var databases: [String]
    /// When the pairing was made.
    public var pairedAt: Date
    /// When the peer last made an authenticated request here, if ever.
    public var lastSeen: Date?

    /// A peer paired now.
    public init(uuid: String, id: NodeID, name: String, addresses: [String], databases: [String], pairedAt: Date = Date()) {
        self.uuid = uuid
        self.id = id
        self.name = name
        self.addresses = addresses
        self.databases = databases
        self.pairedAt = pairedAt
    }

    enum CodingKeys: String, CodingKey {
        case uuid, id, name, addresses, databases
        case pairedAt = "paired_at"
        case lastSeen = "last_seen"
    }

    /// The last address the peer was reached at.
    public var lastAddress: String? { addresses.first }
}
