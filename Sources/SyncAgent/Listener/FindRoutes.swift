import Hummingbird
import Store

/// Mango queries and their indexes, as CouchDB 3.5 answers them:
/// `POST /{db}/_find`, `POST /{db}/_explain`, `GET`/`POST /{db}/_index` and
/// `DELETE /{db}/_index/{ddoc}/json/{name}`. Authorization (users only, never
/// paired peers; indexes need the database's admins) is decided before, in
/// ``Listener/requirement(route:method:)``.
extension CouchResponder {
    func find(_ db: Database, _ exchange: inout Exchange) async throws -> Response {
        let query = try FindQuery(try await Self.readQueryBody(&exchange, limit: configuration.maximumRequestSize))
        return Self.json(try await db.find(query).json(executionStats: query.executionStats))
    }

    func explain(_ db: Database, _ exchange: inout Exchange) async throws -> Response {
        let query = try FindQuery(try await Self.readQueryBody(&exchange, limit: configuration.maximumRequestSize))
        return Self.json(try db.explain(query))
    }

    func index(_ path: String, of db: Database, method: HTTPRequest.Method, _ exchange: inout Exchange) async throws -> Response {
        if path == "_index" {
            switch method {
            case .get:
                let indexes = try db.queryIndexes()
                let skip = try exchange.query.integer("skip") ?? 0
                let limit = try exchange.query.integer("limit") ?? indexes.count
                guard skip >= 0, limit >= 1 || indexes.isEmpty else {
                    throw CouchError(.badRequest, "invalid_list_index_params", "Index parameter ranges: limit > 1, skip > 0")
                }
                let page = indexes.dropFirst(skip).prefix(limit)
                return Self.json(["total_rows": .number(Double(indexes.count)), "indexes": .array(Array(page))])
            case .post:
                let created = try await db.createIndex(try await Self.readQueryBody(&exchange, limit: configuration.maximumRequestSize))
                return Self.json([
                    "result": created.0 == .created ? "created" : "exists",
                    "id": .string(created.designDocument), "name": .string(created.name),
                ])
            default:
                throw CouchError.methodNotAllowed
            }
        }
        // `_index/{ddoc}/json/{name}` or `_index/_design/{ddoc}/json/{name}`.
        var parts = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        if parts.first == "_design" { parts.removeFirst() }
        guard parts.count == 3 else { throw CouchError.badRequest("Index paths are /{db}/_index/{ddoc}/json/{name}") }
        guard method == .delete else { throw CouchError.methodNotAllowed }
        guard parts[1] == "json" else { throw StoreError.notFound() }
        try await db.deleteIndex(designDocument: parts[0], name: parts[2])
        return Self.json(["ok": true])
    }

    /// The JSON body; as CouchDB's Mango, 415 unless the request says it is JSON.
    private static func readQueryBody(_ exchange: inout Exchange, limit: Int) async throws -> JSON {
        guard exchange.mediaType == "application/json" else { throw CouchError.notJSON }
        return try await exchange.readJSON(limit: limit)
    }
}
