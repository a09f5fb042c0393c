import JSON
import Store

/// What a `_bulk_get` asked for, and which documents and revisions its answer has
/// named so far: each answer must be about a document asked for (never a `_local/`
/// one) and a revision asked for (or, as `latest=true` allows, a leaf descending from
/// one), and what the answer leaves out is known, so it is not passed over.
struct RequestedAnswers {
    private let requests: [MissingRevisions]
    private let asked: Set<String>
    private let endpoint: String
    private var answered = Set<String>()
    /// The revisions asked for, by document.
    private let wanted: [String: [RevisionID]]
    /// The revisions asked for that no answer has covered yet, by document.
    private var uncovered: [String: Set<RevisionID>]

    /// The answers to `requests`, from `endpoint`.
    init(_ requests: [MissingRevisions], endpoint: String) {
        self.requests = requests
        self.asked = Set(requests.map(\.id))
        self.endpoint = endpoint
        self.wanted = Dictionary(requests.map { ($0.id, $0.missing) }, uniquingKeysWith: +)
        self.uncovered = wanted.mapValues(Set.init)
    }

    /// `fetched` as the replicator may take it. A revision found must be one asked for, or a
    /// leaf whose `_revisions` hold one: anything else (a source answering with another
    /// revision) fails, so the revision asked for is neither taken as written nor passed over.
    mutating func checked(_ fetched: FetchedRevision) -> FetchedRevision {
        switch fetched {
        case .found(let found):
            let wanted = self.wanted[found.id] ?? []
            // The revision asked for itself, the usual answer, needs no look at its history.
            let covers = wanted.contains(found.revision) ? [found.revision] : Set(wanted).intersection(Self.history(of: found))
            guard !covers.isEmpty else {
                // Counted once, against a revision asked for that nothing has covered.
                let asked = wanted.first { uncovered[found.id]?.contains($0) == true }
                if let asked { uncovered[found.id]?.remove(asked) }
                return .failed(id: found.id, revision: asked ?? found.revision,
                               reason: "the source answered revision \(found.revision), which was not asked for")
            }
            uncovered[found.id]?.subtract(covers)
        case .missing(let id, let revision?), .failed(let id, let revision?, _), .refused(let id, let revision?, _):
            uncovered[id]?.remove(revision)
        case .missing(let id, nil), .failed(let id, nil, _), .refused(let id, nil, _):
            uncovered[id] = []
        }
        return fetched
    }

    /// The revisions asked for of documents the answer named, that none of its answers covered.
    var leftOut: [(id: String, revision: RevisionID)] {
        requests.filter { answered.contains($0.id) }.flatMap { request in
            request.missing.filter { uncovered[request.id]?.contains($0) == true }.map { (request.id, $0) }
        }
    }

    /// A found revision's ancestors, from its `_revisions`.
    private static func history(of revision: ReplicatedRevision) -> [RevisionID] {
        guard let start = revision.json["_revisions"]?["start"]?.intValue, let ids = revision.json["_revisions"]?["ids"]?.arrayValue else { return [] }
        return ids.enumerated().compactMap { offset, id in id.stringValue.flatMap { RevisionID("\(start - offset)-\($0)") } }
    }

    /// The document a result of the JSON answer is about.
    mutating func document(named id: String?) throws(EndpointError) -> String {
        guard let id, asked.contains(id), !id.hasPrefix("_local/") else {
            throw .badResponse(endpoint, "_bulk_get answered for a document not asked for")
        }
        answered.insert(id)
        return id
    }

    /// The document a part of the multipart answer is about: as its headers or JSON say,
    /// or, for CouchDB's `not_found` part that names only the revision, the first document
    /// not yet answered that was asked for at that revision.
    mutating func document<Body>(for answer: MultipartRevisionReader<Body>.Answer) throws(EndpointError) -> String {
        let json = answer.json
        if let id = answer.documentID ?? json["ok"]?["_id"]?.stringValue ?? json["error"]?["id"]?.stringValue {
            return try document(named: id)
        }
        let revision = (json["error"]?["rev"] ?? json["missing"])?.stringValue.flatMap { RevisionID($0) }
        let match = requests.first { !answered.contains($0.id) && revision.map($0.missing.contains) == true }
        return try document(named: match?.id)
    }

    /// The requests no answer has named.
    var unanswered: [MissingRevisions] { requests.filter { !answered.contains($0.id) } }
}
