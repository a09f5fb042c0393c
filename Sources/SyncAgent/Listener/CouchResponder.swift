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
        case .server(let path):
            guard let endpoint = ListenerEndpoint.server(path) else { throw CouchError.notFound("missing") }
            return try await answer(endpoint, path: path, database: nil, method: method, &exchange)
        case .database(let name):
            return try await database(name, method: method, &exchange)
        case .databaseEndpoint(let name, let path):
            guard let endpoint = ListenerEndpoint.database(path) else {
                throw StoreError.illegalDocID("Only reserved document ids may start with underscore.")
            }
            return try await answer(endpoint, path: path, database: name, method: method, &exchange)
        case .local(let name, let id):
            return try await local(id, in: try open(name), method: method, &exchange)
        case .document(let name, let id):
            return try await document(id, in: try open(name), method: method, &exchange)
        case .attachment(let name, let id, let attachmentName):
            return try await attachment(attachmentName, of: id, in: try open(name), method: method, &exchange)
        }
    }

    /// Answers with `endpoint` at `path` (of the database `database`, if any): 405 for a method it lacks.
    private func answer(_ endpoint: ListenerEndpoint, path: String, database: String?, method: HTTPRequest.Method,
                        _ exchange: inout Exchange) async throws -> Response {
        guard endpoint.methods[method] != nil else { throw CouchError.methodNotAllowed }
        switch endpoint.handler {
        case .server(let handler): return try await handler(self, path, method, &exchange)
        case .database(let handler):
            guard let database else { throw CouchError.notFound("missing") }
            return try await handler(self, try open(database), path, method, &exchange)
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

    /// The most a body of a few fields (credentials, a pairing, a node command) may hold.
    static let smallBodyLimit = 64 << 10

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
