import FoundationEssentials
import Hummingbird
import JSON
import Store

/// One named endpoint of the listener, server-wide (`/_up`) or of a database
/// (`/{db}/_changes`): the methods it answers, what each needs, how metrics label it,
/// and its handler. Dispatch, 405 answers, authorization and metrics all read
/// ``ListenerEndpoint/serverEndpoints`` and ``ListenerEndpoint/databaseEndpoints``, so they cannot disagree.
struct ListenerEndpoint: Sendable {
    /// What a method of an endpoint needs; of a database endpoint, in its database.
    enum Need: Sendable, Equatable {
        /// Anyone, even anonymous.
        case open
        /// Any authenticated user or paired peer.
        case authenticated
        /// A paired peer (a group member), over mutual TLS.
        case peer
        /// A server admin.
        case serverAdmin
        /// A server admin, or a user with this role.
        case serverAdminOr(role: String)
        /// At least this access to the database (``Requirement/database(_:_:)``).
        case database(DatabaseAccess)
        /// At least this access, by a user or an admin, not a peer (``Requirement/application(_:_:)``).
        case application(DatabaseAccess)

        /// The requirement this need makes in the database `name` (unused by server endpoints).
        func requirement(in name: String) -> Requirement {
            switch self {
            case .open: .open
            case .authenticated: .authenticated
            case .peer: .peer
            case .serverAdmin: .serverAdmin
            case .serverAdminOr(let role): .serverAdminOr(role: role)
            case .database(let access): .database(name, access)
            case .application(let access): .application(name, access)
            }
        }
    }

    /// How a request to the endpoint is answered, given the path after the server or database
    /// (the endpoint's name, or below it) and the method (`HEAD` as `GET`).
    enum Handler: Sendable {
        case server(@Sendable (CouchResponder, String, HTTPRequest.Method, inout Exchange) async throws -> Response)
        case database(@Sendable (CouchResponder, Database, String, HTTPRequest.Method, inout Exchange) async throws -> Response)
    }

    /// The path after the server or the database; one ending in `/` takes every path below it.
    let name: String
    /// What each method needs; any other method gets 405.
    let methods: [HTTPRequest.Method: Need]
    let handler: Handler

    /// How metrics label a request to it: `/_up`, `/{db}/_changes`, `/{db}/_index/{path}`.
    var label: String {
        let path = name.hasSuffix("/") ? name + "{path}" : name
        if case .database = handler { return "/{db}/" + path }
        return "/" + path
    }

    /// The server endpoint answering `path` (after the first `/`), if any.
    static func server(_ path: String) -> ListenerEndpoint? { named(path, in: serverEndpoints) }

    /// The database endpoint answering `path` (after `/{db}/`), if any.
    static func database(_ path: String) -> ListenerEndpoint? { named(path, in: databaseEndpoints) }

    private static func named(_ path: String, in table: [ListenerEndpoint]) -> ListenerEndpoint? {
        table.first { $0.name == path } ?? table.first { $0.name.hasSuffix("/") && path.hasPrefix($0.name) }
    }

    /// The server's endpoints (`/_up`, …); the other server paths are 404.
    static let serverEndpoints: [ListenerEndpoint] = [
        ListenerEndpoint(name: "_up", methods: [.get: .open], handler: .server { _, _, _, _ in CouchResponder.json(["status": "ok"]) }),
        ListenerEndpoint(name: "_all_dbs", methods: [.get: .serverAdmin], handler: .server { responder, _, _, _ in
            CouchResponder.json(.array(responder.catalog.names().map { .string($0) }))
        }),
        ListenerEndpoint(name: "_uuids", methods: [.get: .authenticated], handler: .server { _, _, _, exchange in
            let count = min(try exchange.query.integer("count") ?? 1, 1000)
            return CouchResponder.json(["uuids": .array((0..<count).map { _ in .string(Database.newDocumentID()) })])
        }),
        ListenerEndpoint(name: "_session", methods: [.get: .open, .post: .open, .delete: .open], handler: .server { responder, _, method, exchange in
            try await responder.session(method: method, &exchange)
        }),
        ListenerEndpoint(name: "_pair", methods: [.post: .open], handler: .server { responder, _, _, exchange in
            try await responder.pair(&exchange)
        }),
        ListenerEndpoint(name: "_introductions", methods: [.get: .peer], handler: .server { responder, _, _, exchange in
            try responder.introductions(exchange)
        }),
        // The agent's status (what `syncd status` shows); 404 when no agent runs this listener.
        ListenerEndpoint(name: "_syncd", methods: [.get: .serverAdmin], handler: .server { responder, _, _, _ in
            guard let status = responder.listener.agent?.status() else { throw CouchError.notFound("missing") }
            return CouchResponder.bytesResponse(Array(try AgentStatus.encoder.encode(status)))
        }),
        // `syncd reload`: answers once the configuration is applied, or why it is not.
        ListenerEndpoint(name: "_syncd/reload", methods: [.post: .serverAdmin], handler: .server { responder, _, _, _ in
            guard let agent = responder.listener.agent else { throw CouchError.notFound("missing") }
            do { try await agent.reload() } catch { throw CouchError(.badRequest, "bad_request", "\(error)") }
            return CouchResponder.json(["ok": true])
        }),
        // The node's control API: users, peers, invitations (`NodeRoutes.swift`).
        ListenerEndpoint(name: "_syncd/", methods: [.get: .serverAdmin, .put: .serverAdmin, .post: .serverAdmin, .delete: .serverAdmin],
                 handler: .server { responder, path, method, exchange in
                     try await responder.nodeControl(String(path.dropFirst("_syncd/".count)), method: method, &exchange)
                 }),
        ListenerEndpoint(name: "_active_tasks", methods: [.get: .serverAdmin], handler: .server { responder, _, _, _ in responder.activeTasks() }),
        ListenerEndpoint(name: "_scheduler/jobs", methods: [.get: .serverAdmin], handler: .server { responder, _, _, exchange in
            try responder.schedulerJobs(exchange)
        }),
        ListenerEndpoint(name: "_scheduler/docs", methods: [.get: .serverAdmin], handler: .server { responder, _, _, exchange in
            try responder.schedulerDocs(exchange)
        }),
        // As in CouchDB, a scraper needs no admin password: a user with the role `_metrics` will do.
        ListenerEndpoint(name: "_node/_local/_prometheus", methods: [.get: .serverAdminOr(role: "_metrics")],
                 handler: .server { responder, _, _, _ in responder.prometheus() }),
    ]

    /// A database's endpoints (`/{db}/_changes`, …); another `/{db}/_name` is 400, as in CouchDB.
    static let databaseEndpoints: [ListenerEndpoint] = [
        // Reads, some of them sent as POST by replicators.
        ListenerEndpoint(name: "_changes", methods: [.get: .database(.read), .post: .database(.read)], handler: .database { responder, db, _, _, exchange in
            try await responder.changes(db, &exchange)
        }),
        ListenerEndpoint(name: "_bulk_get", methods: [.post: .database(.read)], handler: .database { responder, db, _, _, exchange in
            try await responder.bulkGet(db, &exchange)
        }),
        ListenerEndpoint(name: "_revs_diff", methods: [.post: .database(.read)], handler: .database { responder, db, _, _, exchange in
            try await responder.revsDiff(db, &exchange)
        }),
        ListenerEndpoint(name: "_all_docs", methods: [.get: .database(.read), .post: .database(.read)], handler: .database { responder, db, _, _, exchange in
            try await responder.allDocs(db, &exchange)
        }),
        ListenerEndpoint(name: "_bulk_docs", methods: [.post: .database(.write)], handler: .database { responder, db, _, _, exchange in
            try await responder.bulkDocs(db, &exchange)
        }),
        ListenerEndpoint(name: "_ensure_full_commit", methods: [.post: .database(.write)], handler: .database { _, db, _, _, _ in
            try await db.ensureFullCommit()
            return CouchResponder.json(["ok": true, "instance_start_time": .string(String(db.instanceStartTime))], status: .created)
        }),
        // Queries read; indexes are design documents, so changing them needs the database's admins.
        ListenerEndpoint(name: "_find", methods: [.post: .application(.read)], handler: .database { responder, db, _, _, exchange in
            try await responder.find(db, &exchange)
        }),
        ListenerEndpoint(name: "_explain", methods: [.post: .application(.read)], handler: .database { responder, db, _, _, exchange in
            try await responder.explain(db, &exchange)
        }),
        ListenerEndpoint(name: "_index", methods: [.get: .application(.read), .post: .application(.admin)], handler: .database { responder, db, path, method, exchange in
            try await responder.index(path, of: db, method: method, &exchange)
        }),
        ListenerEndpoint(name: "_index/", methods: [.delete: .application(.admin)], handler: .database { responder, db, path, method, exchange in
            try await responder.index(path, of: db, method: method, &exchange)
        }),
        // Views read; clean-up and compaction need the database's admins, as in CouchDB.
        ListenerEndpoint(name: "_design/", methods: [.get: .application(.read), .post: .application(.read)],
                         handler: .database { responder, db, path, method, exchange in
                             try await responder.design(path, of: db, method: method, &exchange)
                         }),
        ListenerEndpoint(name: "_view_cleanup", methods: [.post: .application(.admin)], handler: .database { responder, db, _, _, _ in
            try await responder.cleanUpViews(of: db)
        }),
        ListenerEndpoint(name: "_compact/", methods: [.post: .application(.admin)], handler: .database { responder, db, path, _, exchange in
            try await responder.compactViews(path, of: db, &exchange)
        }),
        ListenerEndpoint(name: "_security", methods: [.get: .database(.read), .put: .database(.admin)], handler: .database { responder, db, _, method, exchange in
            try await responder.security(db, method: method, &exchange)
        }),
        ListenerEndpoint(name: "_revs_limit", methods: [.get: .database(.read), .put: .serverAdmin], handler: .database { responder, db, _, method, exchange in
            try await responder.revsLimit(db, method: method, &exchange)
        }),
        ListenerEndpoint(name: "_purge", methods: [.post: .serverAdmin], handler: .database { responder, db, _, _, exchange in
            try await responder.purge(db, &exchange)
        }),
        ListenerEndpoint(name: "_purge_infos_limit", methods: [.get: .database(.read), .put: .serverAdmin],
                 handler: .database { responder, db, _, method, exchange in
                     guard method == .put else { return CouchResponder.json(.number(Double(try db.purgeInfosLimit()))) }
                     return try await responder.setPurgeInfosLimit(db, &exchange)
                 }),
        ListenerEndpoint(name: "_compact", methods: [.post: .serverAdmin], handler: .database { _, db, _, _, _ in
            try await db.compact()
            return CouchResponder.json(["ok": true], status: .accepted)
        }),
    ]
}
