import Hummingbird

extension Route {
    /// The path with names replaced by placeholders: what metrics label a request with
    /// (a named endpoint by its ``ListenerEndpoint/label``).
    var template: String {
        switch self {
        case .root: "/"
        case .server(let path): ListenerEndpoint.server(path)?.label ?? "/{other}"
        case .database: "/{db}"
        case .databaseEndpoint(_, let path): ListenerEndpoint.database(path)?.label ?? "/{db}/{other}"
        case .local: "/{db}/_local/{docid}"
        case .document: "/{db}/{docid}"
        case .attachment: "/{db}/{docid}/{attachment}"
        }
    }
}
