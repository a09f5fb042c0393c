import FoundationEssentials
import Store

/// Who made a request, as the listener decides what it may do.
enum Principal: Sendable {
    /// No credentials and no client certificate.
    case anonymous
    /// No credentials, and a client certificate that is no paired peer's (an
    /// unpaired or revoked node): what anonymous clients may do, and a 403 that
    /// says so where anonymous clients get 401.
    case stranger(NodeID)
    /// A user who proved a password (Basic) or holds a session cookie.
    case user(name: String, record: UserRecord, method: String, issued: Date?)
    /// A paired peer, proven by its client certificate (mutual TLS).
    case peer(PairedPeer)
    /// A process of the data directory's owner, through the agent's control
    /// socket (which only the owner and its group can open): a server admin.
    case owner

    /// Whether the request proved anything at all.
    var isAuthenticated: Bool {
        switch self {
        case .anonymous, .stranger: false
        case .user, .peer, .owner: true
        }
    }

    /// Whether this is a server admin.
    var isAdmin: Bool {
        switch self {
        case .user(_, let record, _, _): record.isAdmin
        case .owner: true
        case .anonymous, .stranger, .peer: false
        }
    }

    /// The paired peer, if it is one.
    var peer: PairedPeer? {
        if case .peer(let peer) = self { return peer }
        return nil
    }

    /// The name `_session` reports: the user's, or `peer:<uuid>` for a peer.
    var name: String? {
        switch self {
        case .anonymous, .stranger: nil
        case .user(let name, _, _, _): name
        case .peer(let peer): "peer:" + peer.uuid
        case .owner: "_owner"
        }
    }

    /// Whom a write is made for, as design documents' `validate_doc_update` sees it (`userCtx`).
    var author: WriteAuthor { WriteAuthor(name: name, roles: roles) }

    /// The roles `_session` reports and `_security` matches.
    var roles: [String] {
        switch self {
        case .anonymous, .stranger: []
        case .user(_, let record, _, _): record.roles
        case .peer: ["_syncd_peer"]
        case .owner: [UserStore.adminRole]
        }
    }
}
