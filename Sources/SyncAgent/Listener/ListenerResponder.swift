import Hummingbird

/// The listener's request path, one middleware per concern: metrics (request
/// counts and latencies by route template), the page a browser gets for an open
/// pairing invitation, access (authentication and authorization), then the CouchDB routes. Every answer, refusals included,
/// gets CouchDB's `Cache-Control`, and a `HEAD` gets the `GET` answer's head.
struct ListenerResponder: HTTPResponder {
    typealias Context = ListenerContext

    let metrics = MetricsMiddleware<ListenerContext>()
    let invitationPage: InvitationPageMiddleware
    let access: AccessMiddleware
    let routes: CouchResponder

    init(listener: Listener) {
        invitationPage = InvitationPageMiddleware(listener: listener)
        access = AccessMiddleware(listener: listener)
        routes = CouchResponder(listener: listener)
    }

    func respond(to request: Request, context: Context) async throws -> Response {
        context.coreContext.endpointPath.value = Route(path: request.uri.path)?.template ?? "(invalid)"
        var response = try await metrics.handle(request, context: context) { request, context in
            try await invitationPage.handle(request, context: context) { request, context in
                try await access.handle(request, context: context) { request, context in
                    try await routes.respond(to: request, context: context)
                }
            }
        }
        response.headers[.cacheControl] = response.headers[.cacheControl] ?? "must-revalidate"
        if request.method == .head { return response.createHeadResponse() }
        return response
    }
}
