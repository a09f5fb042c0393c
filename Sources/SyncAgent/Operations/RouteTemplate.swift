import Hummingbird

extension Route {
    /// The endpoints with a fixed name, kept as they are in ``template``.
    private static let serverEndpoints: Set = ["_up", "_all_dbs", "_uuids", "_session", "_pair", "_syncd", "_active_tasks",
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
