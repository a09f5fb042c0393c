import FoundationEssentials

/// What the commands change or read on a node: users, peers, invitations and
/// databases. Two implementations give the same answers: ``Node`` itself, when
/// the command claimed the data directory, and ``AgentControl``, which asks the
/// running agent over its control socket. ``NodeAccess`` picks one.
public protocol NodeControl: Sendable {
    /// The users who may log in, by name.
    func users() async throws -> [UserEntry]
    /// Adds a user or sets a user's password; `roles` (when given) replaces the user's roles.
    func setUser(_ name: String, password: String, roles: [String]?) async throws -> UserEntry
    /// Removes a user; `false` if there was none.
    func removeUser(_ name: String) async throws -> Bool
    /// The paired peers, in pairing order.
    func peers() async throws -> [PairedPeer]
    /// Removes the one member `text` names (see ``PeerStore/matches(_:_:)``): revokes its pairing, or drops
    /// it if introduced; either way it is not taken from an introduction again here (``PeerStore/remove(id:)``).
    func removePeer(_ text: String) async throws -> PairedPeer
    /// Joins the node of the invitation URL `url`, telling it `port` (default: this node's listener's);
    /// `introduce: false` keeps the pair out of both nodes' introductions.
    func join(_ url: String, port: Int?, introduce: Bool) async throws -> PairedPeer
    /// Makes a one-time invitation to `databases`, valid for `lifetime`; `introduce: false` makes the pair private.
    func invite(databases: [String], lifetime: Duration, introduce: Bool) async throws -> InvitationTicket
    /// Waits until the invitation `handle` is used, expires or is cancelled, or `limit` passes.
    func waitForInvitation(_ handle: String, atMost limit: Duration?) async throws -> InvitationWatch.Outcome
    /// Cancels the open invitations (only `handle`, if given); returns how many.
    func cancelInvitations(handle: String?) async throws -> Int
    /// The database `name`, created if missing.
    func openDatabase(_ name: String) async throws -> DatabaseSummary
}

/// A user as the commands list it.
public struct UserEntry: Sendable, Hashable, Codable {
    /// The user name.
    public var name: String
    /// The user's roles (`_admin` for a server admin).
    public var roles: [String]

    /// A user named `name` with `roles`.
    public init(name: String, roles: [String]) {
        self.name = name
        self.roles = roles
    }
}

/// A new invitation: what goes into its URL. The secret is shown once and kept nowhere.
public struct InvitationTicket: Sendable, Hashable, Codable {
    /// A short handle to wait for or cancel it by.
    public var handle: String
    /// The secret the joining node presents.
    public var secret: String
    /// The databases it shares.
    public var databases: [String]
    /// When it stops being accepted.
    public var expires: Date
    /// The inviting node's name.
    public var name: String
    /// The inviting node's ID.
    public var id: NodeID
    /// The inviting node's UUID.
    public var uuid: String
    /// The port the inviting node's listener serves HTTPS on.
    public var port: Int
    /// The address to put in the URL (see ``ListenerRecord/invitationHost``), if the node has one.
    public var host: String?

    /// The invitation's URL, with `host` (default: the node's ``host``).
    public func url(host given: String? = nil) throws(NodeControlError) -> InvitationURL {
        guard let host = given ?? host else {
            throw .invalid("this machine has no LAN address to put in the URL; give one with --address")
        }
        return InvitationURL(host: host, port: port, databases: databases, id: id, secret: secret)
    }
}

/// A database as `syncd info` shows it.
public struct DatabaseSummary: Sendable, Hashable, Codable {
    /// The database's UUID.
    public var uuid: String
    /// Documents, not counting deleted ones.
    public var documents: Int
    /// Deleted documents.
    public var deleted: Int
    /// The update sequence, as the listener gives it.
    public var updateSequence: String
    /// The size of its files on disk, in bytes.
    public var size: Int
}

/// Why a node cannot do what a command asked, said plainly.
public enum NodeControlError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No paired peer matches.
    case noSuchPeer(String)
    /// More than one paired peer matches.
    case ambiguousPeer(String, Int)
    /// The request was invalid (an invalid name, an empty password).
    case invalid(String)
    /// Pairing failed (the reason as ``PairingError`` says it).
    case pairing(String)
    /// The agent refused, with its HTTP status, error and reason (the reason is what the node said).
    case reported(Int, String, String)

    public var description: String {
        switch self {
        case .noSuchPeer(let text): "no paired peer matches \(text)"
        case .ambiguousPeer(let text, let count): "\(text) matches \(count) peers; give more of the ID"
        case .invalid(let why): why
        case .pairing(let why): why
        case .reported(_, _, let reason): reason
        }
    }
}
