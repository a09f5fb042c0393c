import JSON
import Store

/// Which documents a replication carries. A push filter runs on the local
/// changes feed; a pull filter is sent to the remote as `filter=_doc_ids`,
/// `filter=_selector` or `filter=DESIGN/NAME`, so it works against Apache CouchDB too.
public enum ReplicationFilter: Sendable, Hashable {
    /// Only these documents.
    case documentIDs([String])
    /// Only documents whose winning revision matches this Mango selector.
    case selector(JSON)
    /// Only revisions a filter function of the source's design document passes (`DESIGN/NAME`,
    /// `filters.NAME` of `_design/DESIGN`), called with `req.query` = `queryParameters`. It runs
    /// on the source, as CouchDB's replicator runs it; the replication's id includes its code.
    case function(name: String, queryParameters: JSON.Object)

    /// The design document id and the function's name of `DESIGN/NAME`; `nil` when malformed.
    public static func designFunction(_ name: String) -> (design: String, function: String)? {
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { return nil }
        return ("_design/" + parts[0], String(parts[1]))
    }

    /// The filter in a stable text form, part of the replication id: sorted
    /// ids, or the selector with sorted keys.
    public var canonicalForm: String {
        switch self {
        case .documentIDs(let ids):
            "doc_ids:" + JSON.array(Set(ids).sorted().map { .string($0) }).serialized()
        case .selector(let selector):
            "selector:" + selector.serialized(sortedKeys: true)
        case .function(let name, let parameters):
            "filter:" + name + ":" + JSON.object(parameters).serialized(sortedKeys: true)
        }
    }
}
