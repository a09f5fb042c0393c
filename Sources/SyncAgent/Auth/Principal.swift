import Foundation

/// Who made a request, as the listener decides what it may do.
enum Principal: Sendable {
    /// No credentials, and no paired peer's certificate.
    case anonymous
    /// A user who proved a password (Basic) or holds a session cookie.
    case user(name: String, record: UserRecord, method: String, issued: Date?)
    /// A paired peer, proven by its client certificate (mutual TLS).
    case peer(PairedPeer)

    /// Whether the request proved anything at all.
    var isAuthenticated: Bool {
        if case .anonymous = self { return false }
        return true
    }

    /// Whether this is a server admin.
    var isAdmin: Bool {
        if case .user(_, let record, _, _) = self { return record.isAdmin }
        return false
    }

    /// The paired peer, if it is one.
    var peer: PairedPeer? {
        if case .peer(let peer) = self { return peer }
        return nil
    }

    /// The name `_session` reports: the user's, or `peer:<uuid>` for a peer.
    var name: String? {
        switch self {
        case .anonymous: nil
        case .user(let name, _, _, _): name
        case .peer(let peer): "peer:" + peer.uuid
        }
    }

    /// The roles `_session` reports and `_security` matches.
    var roles: [String] {
        switch self {
        case .anonymous: []
        case .user(_, let record, _, _): record.roles
        case .peer: ["_syncd_peer"]
        }
    }
}
