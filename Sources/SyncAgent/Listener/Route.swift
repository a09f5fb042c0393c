import FoundationEssentials

/// What a request path names, in CouchDB's URL layout.
///
/// Each path segment is percent-decoded on its own, so a document id may
/// contain `/` when sent as `%2F` (`/db/_design%2Fx` names `_design/x`).
enum Route: Equatable {
    /// `/`
    case root
    /// `/_up`, `/_all_dbs`, `/_session`, `/_uuids`, `/_scheduler/jobs`: server endpoints, by their path without the first `/`.
    case server(String)
    /// `/{db}`
    case database(String)
    /// `/{db}/_changes`, `/{db}/_bulk_docs` and the other database endpoints
    /// (`/{db}/_index/...` whole, its path after the database).
    case databaseEndpoint(String, String)
    /// `/{db}/_local/{id}` (the id includes `_local/`).
    case local(String, String)
    /// `/{db}/{docid}`
    case document(String, String)
    /// `/{db}/{docid}/{attachment}`
    case attachment(String, String, String)

    /// The route of a raw (percent-encoded) path; `nil` when a segment does not decode.
    init?(path: String) {
        var raw = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        if raw.last == "" { raw = raw.dropLast() }
        var segments: [String] = []
        for part in raw {
            guard let decoded = PathEncoding.decode(part) else { return nil }
            segments.append(decoded)
        }
        guard let first = segments.first else {
            self = .root
            return
        }
        if first.hasPrefix("_") {
            self = .server(segments.joined(separator: "/"))
            return
        }
        let database = first
        let rest = Array(segments.dropFirst())
        guard let head = rest.first else {
            self = .database(database)
            return
        }
        switch head {
        case "_design" where rest.count >= 3 && ["_view", "_info"].contains(rest[2]):
            // A design document's views and index: `_design/{ddoc}/_view/{view}`, `_design/{ddoc}/_info`.
            self = .databaseEndpoint(database, rest.joined(separator: "/"))
        case "_compact" where rest.count == 2:
            self = .databaseEndpoint(database, rest.joined(separator: "/"))
        case "_local", "_design":
            guard rest.count >= 2 else {
                self = .databaseEndpoint(database, head)
                return
            }
            let id = head + "/" + rest[1]
            if head == "_local" {
                self = .local(database, head + "/" + rest.dropFirst().joined(separator: "/"))
            } else if rest.count > 2 {
                self = .attachment(database, id, rest.dropFirst(2).joined(separator: "/"))
            } else {
                self = .document(database, id)
            }
        case let id where id.hasPrefix("_local/"):
            self = .local(database, ([id] + rest.dropFirst()).joined(separator: "/"))
        case let id where id.hasPrefix("_design/"):
            self = rest.count > 1 ? .attachment(database, id, rest.dropFirst().joined(separator: "/")) : .document(database, id)
        case "_index" where rest.count > 1:
            // `/{db}/_index/{ddoc}/json/{name}`, the ddoc with or without `_design/`.
            self = .databaseEndpoint(database, rest.joined(separator: "/"))
        case let endpoint where endpoint.hasPrefix("_"):
            guard rest.count == 1 else { return nil }
            self = .databaseEndpoint(database, endpoint)
        default:
            self = rest.count > 1 ? .attachment(database, head, rest.dropFirst().joined(separator: "/")) : .document(database, head)
        }
    }
}
