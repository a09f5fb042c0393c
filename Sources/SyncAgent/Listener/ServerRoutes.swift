import FoundationEssentials
import Hummingbird
import JSON
import Store

/// The server's own endpoints: welcome, `_up`, `_all_dbs`, `_uuids`, `_session`, `_pair`
/// (and the operations endpoints of `TaskRoutes.swift`).
extension CouchResponder {
    /// The syncd version reported in `GET /` under `vendor`.
    static let syncdVersion = SyncdVersion.current

    func welcome() throws -> Response {
        Self.json([
            "couchdb": "Welcome",
            "version": .string(configuration.couchVersion),
            "uuid": .string(listener.node.identity.uuid),
            // CouchDB's optional features (partitioned databases, per-document
            // access, the scheduler, …): syncd has none of them, so claims none.
            "features": [],
            "vendor": ["name": "syncd", "version": .string(Self.syncdVersion)],
        ])
    }

    func server(_ name: String, method: HTTPRequest.Method, _ exchange: inout Exchange) async throws -> Response {
        switch (name, method) {
        case ("_up", .get):
            return Self.json(["status": "ok"])
        case ("_all_dbs", .get):
            return Self.json(.array(catalog.names().map { .string($0) }))
        case ("_uuids", .get):
            let count = min(try exchange.query.integer("count") ?? 1, 1000)
            let uuids = (0..<count).map { _ in JSON.string(Database.newDocumentID()) }
            return Self.json(["uuids": .array(uuids)])
        case ("_pair", .post):
            return try await pair(&exchange)
        case ("_introductions", .get):
            return try introductions(exchange)
        case ("_syncd", .get):
            // The agent's status (what `syncd status` shows); 404 when no agent runs this listener.
            guard let status = listener.agent?.status() else { throw CouchError.notFound("missing") }
            let bytes = try AgentStatus.encoder.encode(status)
            return Self.bytesResponse(Array(bytes))
        case ("_syncd/reload", .post):
            // `syncd reload`: answers once the configuration is applied, or why it is not.
            guard let agent = listener.agent else { throw CouchError.notFound("missing") }
            do { try await agent.reload() } catch { throw CouchError(.badRequest, "bad_request", error.description) }
            return Self.json(["ok": true])
        case (let path, _) where path.hasPrefix("_syncd/"):
            return try await nodeControl(String(path.dropFirst("_syncd/".count)), method: method, &exchange)
        case ("_session", _):
            return try await session(method: method, &exchange)
        case ("_active_tasks", .get):
            return activeTasks()
        case ("_scheduler/jobs", .get):
            return try schedulerJobs(exchange)
        case ("_scheduler/docs", .get):
            return try schedulerDocs(exchange)
        case ("_node/_local/_prometheus", .get):
            return prometheus()
        case ("_up", _), ("_all_dbs", _), ("_uuids", _), ("_pair", _), ("_introductions", _), ("_syncd", _), ("_syncd/reload", _), ("_active_tasks", _), ("_scheduler/jobs", _),
             ("_scheduler/docs", _), ("_node/_local/_prometheus", _):
            throw CouchError.methodNotAllowed
        default:
            throw CouchError.notFound("missing")
        }
    }
}
