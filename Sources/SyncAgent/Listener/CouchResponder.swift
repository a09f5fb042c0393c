import FoundationEssentials
import Hummingbird
import JSON
import Logging
import NIOCore
import NIOHTTP1
import Store

/// Answers a request that ``AccessMiddleware`` let through: hands it to its
/// route's handler, and turns failures into CouchDB's JSON error answers.
struct CouchResponder: HTTPResponder {
    typealias Context = ListenerContext

    let listener: Listener
    var catalog: Catalog { listener.node.catalog }
    var configuration: ListenerConfiguration { listener.configuration }

    func respond(to request: Request, context: Context) async throws -> Response {
        var response: Response
        do {
            guard let route = context.route ?? Route(path: request.uri.path) else {
                throw CouchError.badRequest("Invalid URL path")
            }
            var exchange = Exchange(request: request, route: route, principal: context.principal,
                                    query: QueryParameters(request.uri.query), context: context)
            response = try await dispatch(&exchange)
        } catch let error as CouchError {
            response = Self.error(error)
        } catch let error as StoreError {
            response = Self.error(CouchError(error))
        } catch MultipartError.tooLarge {
            response = Self.error(.tooLarge)
        } catch MultipartError.tooManyParts(let maximum) {
            response = Self.error(CouchError(.contentTooLarge, "too_large", "multipart body has more than \(maximum) parts"))
        } catch let error as MultipartError {
            response = Self.error(.badRequest("\(error)"))
        } catch let error as HTTPError where error.status == .contentTooLarge {
            response = Self.error(.tooLarge)
        } catch is NIOTooManyBytesError {
            response = Self.error(.tooLarge)  // a chunked body past the limit
        } catch let error as HTTPParserError {
            // A truncated body or a broken chunk size: the client's fault, not ours.
            listener.logger.warning("malformed request: \(request.method) \(request.uri.path): \(error)")
            response = Self.error(.badRequest("Malformed request body: \(error)"))
        } catch let error as HTTPError {
            response = Self.error(CouchError(error.status, "bad_request", error.body ?? error.status.reasonPhrase))
        } catch is CancellationError {
            // The client left, or the server is stopping: not logged as a failure (nobody may read this answer).
            response = Self.error(CouchError(StoreError.cancelled))
        } catch {
            listener.logger.error("request failed: \(request.method) \(request.uri.path): \(error)")
            response = Self.error(CouchError(.internalServerError, "unknown_error", "\(type(of: error))"))
        }
        return response
    }

    private func dispatch(_ exchange: inout Exchange) async throws -> Response {
        let method = exchange.request.method == .head ? .get : exchange.request.method
        switch exchange.route {
        case .root:
            guard method == .get else { throw CouchError.methodNotAllowed }
            return try welcome()
        case .server(let name):
            return try await server(name, method: method, &exchange)
        case .database(let name):
            return try await database(name, method: method, &exchange)
        case .databaseEndpoint(let name, let endpoint):
            return try await databaseEndpoint(endpoint, of: try open(name), method: method, &exchange)
        case .local(let name, let id):
            return try await local(id, in: try open(name), method: method, &exchange)
        case .document(let name, let id):
            return try await document(id, in: try open(name), method: method, &exchange)
        case .attachment(let name, let id, let attachmentName):
            return try await attachment(attachmentName, of: id, in: try open(name), method: method, &exchange)
        }
    }

    private func databaseEndpoint(_ endpoint: String, of db: Database, method: HTTPRequest.Method,
                                  _ exchange: inout Exchange) async throws -> Response {
        switch (endpoint, method) {
        case ("_changes", .get), ("_changes", .post): return try await changes(db, &exchange)
        case ("_bulk_docs", .post): return try await bulkDocs(db, &exchange)
        case ("_bulk_get", .post): return try await bulkGet(db, &exchange)
        case ("_revs_diff", .post): return try await revsDiff(db, &exchange)
        case ("_all_docs", .get), ("_all_docs", .post): return try await allDocs(db, &exchange)
        case ("_find", .post): return try await find(db, &exchange)
        case ("_explain", .post): return try await explain(db, &exchange)
        case (let path, _) where path == "_index" || path.hasPrefix("_index/"): return try await index(path, of: db, method: method, &exchange)
        case ("_ensure_full_commit", .post):
            try await db.ensureFullCommit()
            return Self.json(["ok": true, "instance_start_time": .string(String(db.instanceStartTime))], status: .created)
        case ("_revs_limit", .get): return Self.json(.number(Double(try db.revsLimit())))
        case ("_revs_limit", .put):
            let body = try await exchange.readJSON(limit: configuration.maximumRequestSize)
            guard let limit = body.intValue, limit > 0 else { throw CouchError.badRequest("revs_limit must be a positive integer") }
            try await db.setRevsLimit(limit)
            return Self.json(["ok": true])
        case ("_security", .get):
            return Self.json(try db.security() ?? SecurityObject.adminOnly)
        case ("_security", .put):
            let security = JSON.object(try await exchange.readObject(limit: 1 << 20))
            try SecurityObject.validate(security)
            try await db.setSecurity(security)
            return Self.json(["ok": true])
        case ("_purge", .post): return try await purge(db, &exchange)
        case ("_purge_infos_limit", .get): return Self.json(.number(Double(try db.purgeInfosLimit())))
        case ("_purge_infos_limit", .put): return try await setPurgeInfosLimit(db, &exchange)
        case ("_compact", .post):
            try await db.compact()
            return Self.json(["ok": true], status: .accepted)
        case ("_changes", _), ("_bulk_docs", _), ("_bulk_get", _), ("_revs_diff", _), ("_all_docs", _),
             ("_ensure_full_commit", _), ("_revs_limit", _), ("_compact", _), ("_security", _), ("_purge", _),
             ("_purge_infos_limit", _), ("_find", _), ("_explain", _):
            throw CouchError.methodNotAllowed
        default:
            throw StoreError.illegalDocID("Only reserved document ids may start with underscore.")
        }
    }

    /// The database `name`; 404 if missing.
    func open(_ name: String) throws -> Database {
        try catalog.database(name)
    }

    // MARK: Answers

    /// A JSON answer.
    static func json(_ value: JSON, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        var bytes = value.serializedBytes()
        bytes.append(0x0A)
        return bytesResponse(bytes, status: status, headers: headers)
    }

    /// An answer of already serialized JSON.
    static func bytesResponse(_ bytes: [UInt8], status: HTTPResponse.Status = .ok, headers: HTTPFields = [:],
                              contentType: String = "application/json") -> Response {
        var fields = headers
        fields[.contentType] = contentType
        fields[.contentLength] = String(bytes.count)
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// CouchDB's error answer.
    static func error(_ error: CouchError) -> Response {
        json(error.body, status: error.status, headers: error.headers)
    }
}

/// One request on its way through the listener: the request, its route,
/// who made it (already authorized for the route), and its query.
struct Exchange {
    var request: Request
    let route: Route
    let principal: Principal
    let query: QueryParameters
    let context: ListenerContext

    /// The `Content-Type` media type, lower-cased, without parameters.
    var mediaType: String? {
        request.headers[.contentType].map { $0.split(separator: ";")[0].trimmingWhitespace().lowercased() }
    }

    /// Collects the body, refusing more than `limit` bytes with 413.
    mutating func readBody(limit: Int) async throws -> ByteBuffer {
        if let length = request.headers[.contentLength].flatMap(Int.init), length > limit { throw CouchError.tooLarge }
        do {
            return try await request.collectBody(upTo: limit)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw CouchError.tooLarge
        }
    }

    /// The body as JSON; 400 if it does not parse. With `checkingType`, 415
    /// unless it is declared as JSON; CouchDB's document `PUT` reads JSON
    /// whatever the declared type (curl's `-d` sends a form type).
    mutating func readJSON(limit: Int, checkingType: Bool = true) async throws -> JSON {
        if checkingType, let type = mediaType, type != "application/json" { throw CouchError.notJSON }
        let body = try await readBody(limit: limit)
        do {
            return try JSON(parsing: body.readableBytesView)
        } catch {
            throw CouchError.invalidJSON(error)
        }
    }

    /// The body as a JSON object.
    mutating func readObject(limit: Int, checkingType: Bool = true) async throws -> JSON.Object {
        guard case .object(let object) = try await readJSON(limit: limit, checkingType: checkingType) else {
            throw CouchError.badRequest("Request body must be a JSON object")
        }
        return object
    }

    /// Whether the client accepts `type` (an `Accept` header naming it).
    func accepts(_ type: String) -> Bool {
        request.headers[values: .accept].contains { $0.lowercased().contains(type) }
    }

    /// Whether the client asks for a multipart answer and not JSON, as CouchDB
    /// decides for `_bulk_get` (a client accepting anything gets JSON).
    var prefersMultipart: Bool {
        (accepts("multipart/mixed") || accepts("multipart/related")) && !accepts("application/json") && !accepts("*/*")
    }
}
