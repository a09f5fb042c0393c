import Hummingbird
import JSON
import Store

/// Design documents' views, as CouchDB 3.5 answers them: `GET`/`POST
/// /{db}/_design/{ddoc}/_view/{view}`, `POST …/_view/{view}/queries`,
/// `GET /{db}/_design/{ddoc}/_info`, `POST /{db}/_view_cleanup` and `POST /{db}/_compact/{ddoc}`.
/// Authorization (users only, never paired peers; clean-up and compaction need the
/// database's admins) is decided before, in ``ListenerEndpoint/databaseEndpoints``.
extension CouchResponder {
    /// Answers a path below `_design/`: `{ddoc}/_view/{view}`, `{ddoc}/_view/{view}/queries` or `{ddoc}/_info`.
    func design(_ path: String, of db: Database, method: HTTPRequest.Method, _ exchange: inout Exchange) async throws -> Response {
        let parts = path.split(separator: "/", maxSplits: 4, omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 3, parts[0] == "_design", !parts[1].isEmpty else { throw CouchError.notFound("missing") }
        let design = parts[1]
        switch (parts[2], parts.count) {
        case ("_info", 3):
            guard method == .get else { throw CouchError(.methodNotAllowed, "method_not_allowed", "Only GET allowed") }
            return Self.json(try await db.viewInfo(design: design))
        case ("_view", 4):
            return try await view(parts[3], of: design, in: db, method: method, &exchange)
        case ("_view", 5) where parts[4] == "queries":
            guard method == .post else { throw CouchError(.methodNotAllowed, "method_not_allowed", "Only POST allowed") }
            return try await viewQueries(parts[3], of: design, in: db, &exchange)
        default:
            throw CouchError.notFound("missing")
        }
    }

    private func view(_ name: String, of design: String, in db: Database, method: HTTPRequest.Method, _ exchange: inout Exchange) async throws -> Response {
        var parameters = ViewParameters()
        if method == .post {
            let body = try await Self.viewQueryBody(&exchange, limit: configuration.maximumRequestSize)
            if body["queries"] != nil { throw CouchError.badRequest("The `queries` parameter is no longer supported at this endpoint") }
            if let keys = body["keys"], keys.arrayValue == nil { throw CouchError.badRequest("`keys` member must be an array.") }
            try parameters.apply(body)
        }
        try parameters.apply(exchange.query)
        let query = parameters.query
        let (result, watched) = try await Self.cancelledIfClientLeaves(exchange.request.body) {
            try await db.queryView(design: design, view: name, query)
        }
        var response = Self.json(result.json(updateSequence: query.updateSequence))
        if watched { response.headers[.connection] = "close" }
        return response
    }

    private func viewQueries(_ name: String, of design: String, in db: Database, _ exchange: inout Exchange) async throws -> Response {
        let body = try await Self.viewQueryBody(&exchange, limit: configuration.maximumRequestSize)
        guard let queries = body["queries"] else { throw CouchError.badRequest("POST body must include `queries` parameter.") }
        guard case .array(let items) = queries else { throw CouchError.badRequest("`queries` member must be an array.") }
        var base = ViewParameters()
        try base.apply(exchange.query)
        // Every query is read before any runs: a mistake in one answers 400 for all, as in CouchDB.
        let parsed = try items.map { item throws(CouchError) in
            guard case .object = item else { throw CouchError.badRequest("Each query must be a JSON object") }
            var parameters = base
            try parameters.apply(item)
            return parameters.query
        }
        let (results, watched) = try await Self.cancelledIfClientLeaves(exchange.request.body) {
            var results: [JSON] = []
            for query in parsed {
                results.append(try await db.queryView(design: design, view: name, query).json(updateSequence: query.updateSequence))
            }
            return results
        }
        var response = Self.json(["results": .array(results)])
        if watched { response.headers[.connection] = "close" }
        return response
    }

    /// `POST /{db}/_compact/{ddoc}`: 202 once the design document is known to define views. The
    /// index lives in the database's file, which `POST /{db}/_compact` compacts.
    func compactViews(_ path: String, of db: Database, _ exchange: inout Exchange) async throws -> Response {
        guard exchange.mediaType == "application/json" else { throw CouchError.notJSON }
        _ = try db.viewGroup(design: String(path.dropFirst("_compact/".count)))
        return Self.json(["ok": true], status: .accepted)
    }

    /// `POST /{db}/_view_cleanup`: drops the indexes of views no design document defines now.
    func cleanUpViews(of db: Database) async throws -> Response {
        try await db.cleanUpViews()
        return Self.json(["ok": true], status: .accepted)
    }

    private static func viewQueryBody(_ exchange: inout Exchange, limit: Int) async throws -> JSON {
        guard exchange.mediaType == "application/json" else { throw CouchError.notJSON }
        let body = try await exchange.readJSON(limit: limit)
        guard case .object = body else { throw CouchError.badRequest("Request body must be a JSON object") }
        return body
    }
}

/// A view query's parameters read as CouchDB's `couch_mrview_http:parse_param` reads them: in
/// order, a later one overriding an earlier (the body's members first, then the query string's),
/// each a `query_parse_error` when its value is not of its kind.
struct ViewParameters {
    private(set) var query = ViewQuery()

    /// A value as given: text from the query string (JSON parameters still encoded), or a body's decoded member.
    enum Value {
        case text(String)
        case decoded(JSON)
    }

    mutating func apply(_ parameters: QueryParameters) throws(CouchError) {
        for (name, value) in parameters.all { try apply(name, .text(value)) }
    }

    mutating func apply(_ body: JSON) throws(CouchError) {
        guard case .object(let members) = body else { return }
        for (name, value) in members.members { try apply(name, .decoded(value)) }
    }

    private static func refuse(_ reason: String) -> CouchError { CouchError(.badRequest, "query_parse_error", reason) }

    mutating func apply(_ name: String, _ value: Value) throws(CouchError) {
        switch name {
        case "key":
            let key = try Self.json(value)
            query.startKey = key
            query.endKey = key
        case "keys":
            guard case .array(let keys) = try Self.json(value) else { throw Self.refuse("`keys` must be an array of strings.") }
            if keys.count == 1 {  // CouchDB 3.5 reads one key as `key`, in its place among the parameters
                query.startKey = keys[0]
                query.endKey = keys[0]
                query.keys = nil
            } else {
                query.keys = keys
            }
        case "startkey", "start_key": query.startKey = try Self.json(value)
        case "endkey", "end_key": query.endKey = try Self.json(value)
        case "startkey_docid", "start_key_doc_id": query.startKeyDocumentID = try Self.text(value, "start_key_docid")
        case "endkey_docid", "end_key_doc_id": query.endKeyDocumentID = try Self.text(value, "end_key_docid")
        case "limit": query.limit = try Self.count(value)
        case "skip": query.skip = try Self.count(value)
        case "group_level": query.groupLevel = try Self.count(value)
        case "descending": query.descending = try Self.boolean(value)
        case "group": query.group = try Self.boolean(value)
        case "inclusive_end": query.inclusiveEnd = try Self.boolean(value)
        case "include_docs": query.includeDocuments = try Self.boolean(value)
        case "reduce": query.reduce = try Self.boolean(value)
        case "update_seq": query.updateSequence = try Self.boolean(value)
        case "conflicts": query.conflicts = try Self.boolean(value)
        case "sorted", "attachments", "att_encoding_info": _ = try Self.boolean(value)
        case "stale":
            switch try Self.text(value, "stale") {
            case "ok": query.update = .false
            case "update_after": query.update = .lazy
            default: throw Self.refuse("Invalid value for `stale`.")
            }
        case "stable":
            guard ["true", "false"].contains(Self.plain(value)) else { throw Self.refuse("Invalid value for `stable`.") }
        case "update":
            guard let update = Self.plain(value).flatMap(ViewQuery.Update.init(rawValue:)) else { throw Self.refuse("Invalid value for `update`.") }
            query.update = update
        default:
            break  // CouchDB ignores parameters it does not know
        }
    }

    /// A JSON parameter: the body's value as it is, the query string's decoded.
    private static func json(_ value: Value) throws(CouchError) -> JSON {
        switch value {
        case .decoded(let json): return json
        case .text(let text):
            do { return try JSON(parsing: text) } catch { throw CouchError.invalidJSON(error) }
        }
    }

    /// The value as plain text: the query string's, or a body's string, number or boolean.
    private static func plain(_ value: Value) -> String? {
        switch value {
        case .text(let text): text
        case .decoded(.string(let text)): text
        case .decoded(.bool(let flag)): flag ? "true" : "false"
        case .decoded(let json): json.serialized()
        }
    }

    private static func text(_ value: Value, _ name: String) throws(CouchError) -> String {
        switch value {
        case .text(let text), .decoded(.string(let text)): return text
        case .decoded: throw refuse("`\(name)` must be a string.")
        }
    }

    private static func boolean(_ value: Value) throws(CouchError) -> Bool {
        if case .decoded(.bool(let flag)) = value { return flag }
        let text = plain(value) ?? ""
        switch text.lowercased() {
        case "true": return true
        case "false": return false
        default: throw refuse("Invalid boolean parameter: \"\(text)\"")
        }
    }

    /// A non-negative integer (`parse_pos_int`), at most ``QueryParameters/largestCount``.
    private static func count(_ value: Value) throws(CouchError) -> Int {
        let text = plain(value) ?? ""
        let digits = text.hasPrefix("-") ? text.dropFirst() : text[...]
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            throw refuse("Invalid value for integer: \"\(text)\"")
        }
        if text.hasPrefix("-"), digits.contains(where: { $0 != "0" }) { throw refuse("Invalid value for positive integer: \"\(text)\"") }
        return QueryParameters.count(digits) ?? 0
    }
}
