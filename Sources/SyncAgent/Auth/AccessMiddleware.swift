import Hummingbird

/// The one seam where who may do what is decided, in front of every route:
/// authenticates the request (control socket, password, session cookie, or a
/// paired peer's client certificate), authorizes it for its route and method,
/// and hands it on with the route and principal in its context. A refusal is
/// CouchDB's JSON error, and no route runs. See `Authorization.swift`.
struct AccessMiddleware: MiddlewareProtocol {
    typealias Input = Request
    typealias Output = Response
    typealias Context = ListenerContext

    let listener: Listener

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        do {
            guard let route = Route(path: request.uri.path) else { throw CouchError.badRequest("Invalid URL path") }
            context.route = route
            context.principal = try await listener.authenticate(request, context: context)
            try listener.authorize(context.principal, route: route, method: request.method == .head ? .get : request.method)
        } catch let error as CouchError {
            return CouchResponder.error(error)
        }
        return try await next(request, context)
    }
}
