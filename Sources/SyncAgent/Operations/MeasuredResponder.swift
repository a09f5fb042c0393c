import Hummingbird

/// The listener's responder with Hummingbird's `MetricsMiddleware` in front:
/// request counts and latencies by route, method and status. The route is the
/// path's template (`/{db}/_changes`, never a database or document name), so a
/// client cannot make the metrics grow without bound.
struct MeasuredResponder: HTTPResponder {
    typealias Context = ListenerContext

    let inner: CouchResponder
    let metrics = MetricsMiddleware<ListenerContext>()

    func respond(to request: Request, context: Context) async throws -> Response {
        context.coreContext.endpointPath.value = Route(path: request.uri.path)?.template ?? "(invalid)"
        return try await metrics.handle(request, context: context) { request, context in
            try await inner.respond(to: request, context: context)
        }
    }
}

extension Route {
    /// The endpoints with a fixed name, kept as they are in ``template``.
    private static let serverEndpoints: Set = ["_up", "_all_dbs", "_uuids", "_session", "_pair", "_active_tasks",
                                               "_scheduler/jobs", "_scheduler/docs", "_node/_local/_prometheus"]
    private static let databaseEndpoints: Set = ["_changes", "_bulk_docs", "_bulk_get", "_revs_diff", "_all_docs",
                                                 "_ensure_full_commit", "_revs_limit", "_security", "_purge",
                                                 "_purge_infos_limit", "_compact", "_local", "_design"]

    /// The path with names replaced by placeholders: what metrics label a request with.
    var template: String {
        switch self {
        case .root: "/"
        case .server(let name): Self.serverEndpoints.contains(name) ? "/" + name : "/{other}"
        case .database: "/{db}"
        case .databaseEndpoint(_, let endpoint): Self.databaseEndpoints.contains(endpoint) ? "/{db}/" + endpoint : "/{db}/{other}"
        case .local: "/{db}/_local/{docid}"
        case .document: "/{db}/{docid}"
        case .attachment: "/{db}/{docid}/{attachment}"
        }
    }
}
