import Hummingbird
import JSON
import Store

/// Mango queries and their indexes, as CouchDB 3.5 answers them:
/// `POST /{db}/_find`, `POST /{db}/_explain`, `GET`/`POST /{db}/_index` and
/// `DELETE /{db}/_index/{ddoc}/json/{name}`. Authorization (users only, never
/// paired peers; indexes need the database's admins) is decided before, in
/// ``ListenerEndpoint/databaseEndpoints``.
extension CouchResponder {
    func find(_ db: Database, _ exchange: inout Exchange) async throws -> Response {
        let query = try FindQuery(try await Self.readQueryBody(&exchange, limit: configuration.maximumRequestSize))
        // A query may pass over the whole database: one still running after a moment stops if its client leaves
        // (a client that closes only its sending side looks the same on the wire, and is taken as gone too).
        let (result, watched) = try await Self.cancelledIfClientLeaves(exchange.request.body) { try await db.find(query) }
        var response = Self.json(result.json(executionStats: query.executionStats))
        if watched { response.headers[.connection] = "close" }
        return response
    }

    /// Runs `work`. If it is still running after `patience`, the connection is
    /// watched from then on and `work` is cancelled if the client closes it;
    /// watching reads the connection, so it is not reused after the answer
    /// (`watched`; a failure then says `Connection: close` itself). A quick answer
    /// leaves a keep-alive connection as it was.
    static func cancelledIfClientLeaves<Value: Sendable>(
        _ body: RequestBody, after patience: Duration = .milliseconds(250),
        _ work: @escaping @Sendable () async throws -> Value
    ) async throws -> (Value, watched: Bool) {
        let (finished, signal) = AsyncStream.makeStream(of: Void.self)
        let start = ContinuousClock.now
        let task = Task {
            defer { signal.finish() }
            return try await work()
        }
        return try await withTaskCancellationHandler {
            let quick = await withTaskGroup(of: Bool.self) { group in
                group.addTask {
                    for await _ in finished {}
                    return !Task.isCancelled
                }
                group.addTask {
                    try? await Task.sleep(for: patience)
                    return false
                }
                defer { group.cancelAll() }
                return await group.next() ?? false
            }
            // Quick means within `patience`, however late this task saw it (the pool's threads may all be busy).
            if quick, ContinuousClock.now - start < patience { return (try await task.value, false) }
            do {
                let value = try await body.consumeWithCancellationOnInboundClose { _ in
                    try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
                }
                return (value, true)
            } catch {
                // A failure's answer must close the connection too: watched, it cannot be reused,
                // and a client that kept it would send its next request into a closed channel.
                guard var failure = (error as? CouchError) ?? (error as? StoreError).map(CouchError.init) else { throw error }
                failure.headers[.connection] = "close"
                throw failure
            }
        } onCancel: {
            task.cancel()
        }
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
