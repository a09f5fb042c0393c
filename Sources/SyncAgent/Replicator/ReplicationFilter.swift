import JSON
import Store

/// Which documents a replication carries. A push filter runs on the local
/// changes feed; a pull filter is sent to the remote as `filter=_doc_ids` or
/// `filter=_selector`, so it works against Apache CouchDB too.
public enum ReplicationFilter: Sendable, Hashable {
    /// Only these documents.
    case documentIDs([String])
    /// Only documents whose winning revision matches this Mango selector.
    case selector(JSON)

    /// The filter in a stable text form, part of the replication id: sorted
    /// ids, or the selector with sorted keys.
    public var canonicalForm: String {
        switch self {
        case .documentIDs(let ids):
            "doc_ids:" + JSON.array(Set(ids).sorted().map { .string($0) }).serialized()
        case .selector(let selector):
            "selector:" + selector.serialized(sortedKeys: true)
        }
    }
}
