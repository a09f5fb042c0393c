import Hummingbird
import JSON
import Store

/// What a principal may do in one database, from least to most.
enum DatabaseAccess: Int, Comparable, Sendable {
    /// Nothing: the database is not theirs.
    case none
    /// Read documents, changes and attachments.
    case read
    /// Also write documents (members; paired peers replicate).
    case write
    /// Also design documents and `_security` (the database's admins).
    case admin

    static func < (a: DatabaseAccess, b: DatabaseAccess) -> Bool { a.rawValue < b.rawValue }
}

/// What a route needs.
enum Requirement: Sendable, Equatable {
    /// Anyone, even anonymous: `/`, `/_up`, `/_session`, `/_pair`.
    case open
    /// Any authenticated user or paired peer.
    case authenticated
    /// A paired peer: a member of the group (`_introductions`).
    case peer
    /// A server admin (`_admin`).
    case serverAdmin
    /// A server admin, or a user with this role (CouchDB's `_metrics` for the Prometheus endpoint).
    case serverAdminOr(role: String)
    /// At least this access to the database.
    case database(String, DatabaseAccess)
    /// At least this access to the database, by a user or an admin: the queries
    /// and indexes applications use (`_find`, `_index`). Paired peers only replicate.
    case application(String, DatabaseAccess)
}

/// The one place that decides who may do what on the listener, before any
/// route runs:
/// - server admins (users with `_admin`) may do everything;
/// - users reach a database as its `_security` says (CouchDB's members and
///   admins, by name or role); a database without `_security` is admin-only,
///   and one whose members are both empty is open: anonymous clients may read
///   it, users may write it;
/// - paired peers may replicate the databases shared with them: read, and
///   write replicated revisions (``Principal/mustReplicate``); nothing else;
/// - anonymous clients get 401 for anything else; a node whose certificate is
///   no paired peer's (never paired, or revoked) gets 403 saying so.
extension Listener {
    func authorize(_ principal: Principal, route: Route, method: HTTPRequest.Method) throws(CouchError) {
        do {
            try check(principal, route: route, method: method)
        } catch where error.status == .unauthorized {
            // A node whose certificate is no paired peer's is told so, not asked for a password.
            if case .stranger(let id) = principal {
                throw CouchError(.forbidden, EndpointError.notPaired, "Node \(id.short) is not paired with this node.")
            }
            throw error
        }
    }

    private func check(_ principal: Principal, route: Route, method: HTTPRequest.Method) throws(CouchError) {
        try check(principal, route: route, requirement: Self.requirement(route: route, method: method))
    }

    private func check(_ principal: Principal, route: Route, requirement: Requirement) throws(CouchError) {
        switch requirement {
        case .open:
            return
        case .authenticated:
            guard principal.isAuthenticated else { throw Self.unauthorized("Authentication required.", challenge: true) }
        case .peer:
            guard principal.isAuthenticated else { throw Self.unauthorized("Authentication required.", challenge: true) }
            guard principal.peer != nil else { throw CouchError(.forbidden, "forbidden", "Only the group's members may do this.") }
        case .serverAdmin, .serverAdminOr:
            if case .serverAdminOr(let role) = requirement, principal.peer == nil, principal.roles.contains(role) { return }
            guard principal.isAdmin else {
                throw principal.isAuthenticated ? CouchError(.forbidden, "forbidden", "You are not a server admin.")
                    : Self.unauthorized("You are not a server admin.", challenge: true)
            }
        case .application(let name, let needed):
            if let peer = principal.peer {
                throw CouchError(.forbidden, "forbidden", "Peer \(peer.id.short) may replicate \(name), not query it or change its indexes.")
            }
            try check(principal, route: route, requirement: .database(name, needed))
        case .database(let name, let needed):
            let granted = try access(of: principal, to: name)
            guard granted >= needed else {
                guard principal.isAuthenticated else {
                    throw Self.unauthorized("You are not authorized to access this db.", challenge: true)
                }
                if let peer = principal.peer, granted == .none {
                    throw CouchError(.forbidden, "forbidden", "The database \(name) is not shared with peer \(peer.id.short).")
                }
                throw CouchError(.forbidden, "forbidden", granted == .none
                    ? "You are not allowed to access this db." : "You are not allowed to change this db.")
            }
        }
    }

    /// What `principal` may do in the database `name`.
    func access(of principal: Principal, to name: String) throws(CouchError) -> DatabaseAccess {
        if principal.isAdmin { return .admin }
        if let peer = principal.peer { return node.sharing.shares(name, with: peer) ? .write : .none }
        let security: JSON?
        do {
            security = try node.catalog.database(name).security()
        } catch {
            // A missing database: tell only an authenticated client that it is missing.
            if principal.isAuthenticated { throw CouchError(error) }
            return .none
        }
        guard let security else { return .none }
        let names = principal.name.map { [$0] } ?? []
        let roles = principal.roles
        guard let admins = SecurityObject.lists(security, "admins"), let members = SecurityObject.lists(security, "members") else {
            return .none  // malformed (written before it was checked): grants nothing
        }
        func matches(_ group: (names: [String], roles: [String])) -> Bool {
            group.names.contains(where: names.contains) || group.roles.contains(where: roles.contains)
        }
        if principal.isAuthenticated && matches(admins) { return .admin }
        if members.names.isEmpty && members.roles.isEmpty { return principal.isAuthenticated ? .write : .read }
        return principal.isAuthenticated && matches(members) ? .write : .none
    }

    /// What `route` needs for `method`.
    static func requirement(route: Route, method: HTTPRequest.Method) -> Requirement {
        let reads = method == .get || method == .head
        switch route {
        case .root:
            return .open
        case .server(let path):
            // A method the endpoint lacks is answered 405, whoever asks; an unknown path 404, to users.
            guard let endpoint = ListenerEndpoint.server(path) else { return .authenticated }
            return endpoint.methods[reads ? .get : method]?.requirement(in: "") ?? .open
        case .database(let name):
            switch method {
            case .get, .head: return .database(name, .read)
            case .post: return .database(name, .write)
            default: return .serverAdmin
            }
        case .databaseEndpoint(let name, let path):
            // Another `_name` only reads (it is answered 400), unless a server admin asks.
            guard let endpoint = ListenerEndpoint.database(path) else { return reads ? .database(name, .read) : .serverAdmin }
            return endpoint.methods[reads ? .get : method]?.requirement(in: name) ?? .open
        case .local(let name, _):
            return .database(name, reads ? .read : .write)
        case .document(let name, let id), .attachment(let name, let id, _):
            if reads { return .database(name, .read) }
            return .database(name, id.hasPrefix("_design/") ? .admin : .write)
        }
    }
}

extension Listener {
    /// Checks the ids of documents written in one request to a route that only
    /// needs write access (`_bulk_docs`, `POST /{db}`): a design document needs
    /// the database's admins (CouchDB: "You are not a db or server admin."), and
    /// a paired peer writes local documents only at `/{db}/_local/{id}`, where
    /// it reaches only its own.
    func checkWrite(ids: some Sequence<String>, by principal: Principal, in database: String) throws(CouchError) {
        for id in ids {
            if id.hasPrefix("_local/"), principal.mustReplicate {
                throw CouchError(.forbidden, "forbidden", "Paired peers write local documents only at /{db}/_local/{id}.")
            }
            if id.hasPrefix("_design/"), !principal.isAdmin, !principal.mustReplicate, try access(of: principal, to: database) < .admin {
                throw CouchError(.forbidden, "forbidden", "You are not a db or server admin.")
            }
        }
    }
}

extension Principal {
    /// Whether this principal may only write replicated revisions
    /// (`new_edits=false`): a paired peer replicates, it does not edit.
    var mustReplicate: Bool { peer != nil }

    /// Refuses an edit (`new_edits=true`) by a principal that must replicate.
    func checkMayEdit() throws(CouchError) {
        guard !mustReplicate else {
            throw CouchError(.forbidden, "forbidden", "Paired peers may only write replicated revisions (new_edits=false).")
        }
    }
}
