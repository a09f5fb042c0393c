import JSON
import Store

/// What a `_bulk_get` asked for, and which documents its answer has named so
/// far: each answer must be about a document asked for (never a `_local/` one),
/// and a document the answer leaves out is known, so it is not passed over.
struct RequestedAnswers {
    private let requests: [MissingRevisions]
    private let asked: Set<String>
    private let endpoint: String
    private var answered = Set<String>()

    /// The answers to `requests`, from `endpoint`.
    init(_ requests: [MissingRevisions], endpoint: String) {
        self.requests = requests
        self.asked = Set(requests.map(\.id))
        self.endpoint = endpoint
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
