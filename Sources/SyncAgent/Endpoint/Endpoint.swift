import JSON
import Store

/// One side of a replication: a database the replicator reads changes and
/// revisions from, or writes revisions and checkpoints to.
///
/// The replicator speaks only to this protocol, so the same pipeline runs
/// local-to-local, push, pull and remote-to-remote. ``LocalEndpoint`` wraps a
/// `Store.Database`; ``RemoteEndpoint`` speaks the CouchDB replication protocol
/// over HTTP(S).
public protocol Endpoint: Sendable {
    /// A description for logs and errors, never with credentials.
    var displayName: String { get }

    /// Whether the database lives in this process (decides push or pull in the replication id).
    var isLocal: Bool { get }

    /// Checks that the database can be reached (creating it when asked); the replication's first step.
    func prepare(createIfMissing: Bool) async throws(EndpointError)

    /// The database's stable identity: what the replication id is made from, never a URL.
    func identity() async throws(EndpointError) -> String

    /// Reads the local (never replicated) document `_local/<id>`; `nil` when there is none.
    func localDocument(id: String) async throws(EndpointError) -> JSON?

    /// Writes a local document; `json` carries the `_rev` it replaces. Returns the new `_rev`.
    /// A stale `_rev` fails with ``EndpointError/isConflict``.
    func putLocalDocument(id: String, _ json: JSON) async throws(EndpointError) -> String

    /// Reads the changes feed (`style=all_docs`) from `request.since`, in batches handed to
    /// `deliver`, which may take its time (back pressure). Returns at the end of the feed,
    /// or never when `request.continuous`.
    func changes(_ request: ChangeFeedRequest, deliver: @Sendable (ChangeBatch) async throws -> Void) async throws

    /// The source of filter function `name` (`DESIGN/NAME`: `filters.NAME` of `_design/DESIGN`),
    /// as a replication filtered by it reads it for its id; 404 when either is missing.
    func filterFunction(_ name: String) async throws(EndpointError) -> String

    /// Which of the given leaf revisions the database lacks (`_revs_diff`).
    func missingRevisions(_ revisions: [DocumentRevisions]) async throws(EndpointError) -> [MissingRevisions]

    /// Whether the database is known, without asking it, to have `revision` as the winner
    /// of document `id`; false when unsure. Nil when it never knows (a remote database).
    var recentWinners: (@Sendable (_ revision: RevisionID, _ id: String) -> Bool)? { get }

    /// ``recentWinners`` asked with a revision's text (`N-digest`) as a feed sent it.
    var recentWinnerTexts: ChangeFeedRequest.TargetWinners? { get }

    /// Reads the given revisions with their history and the attachments the
    /// other side lacks (`_bulk_get`, or `open_revs`), handing each to `deliver` as it
    /// is read, which may take its time (back pressure): however large the answer, the
    /// endpoint holds about one revision at a time. Attachment content goes to files
    /// (``ReplicatedRevision/files``), staged in `staging` when it is read from elsewhere.
    func revisions(_ requests: [MissingRevisions], staging: AttachmentStaging,
                   deliver: (FetchedRevision) async -> Void) async throws(EndpointError)

    /// Where attachment content read for this endpoint as a target waits until it is written.
    func attachmentStaging() async throws(EndpointError) -> AttachmentStaging

    /// Writes replicated revisions as they are (`new_edits=false`). Returns the documents that were refused.
    func write(_ revisions: [ReplicatedRevision]) async throws(EndpointError) -> [WriteFailure]

    /// Asks the database to make its writes durable before a checkpoint names them.
    func ensureFullCommit() async throws(EndpointError)
}

extension Endpoint {
    /// The source of filter function `name` in `design`, a design document as read; 404 when missing.
    func filterFunction(_ name: String, in design: JSON?) throws(EndpointError) -> String {
        guard let (_, function) = ReplicationFilter.designFunction(name) else {
            throw EndpointError(status: 400, error: "bad_request", reason: "`filter` must be of the form `designname/filtername`", endpoint: displayName)
        }
        guard let design else { throw EndpointError(status: 404, error: "not_found", reason: "missing", endpoint: displayName) }
        guard let source = design["filters"]?[function]?.stringValue else {
            throw EndpointError(status: 404, error: "not_found", reason: "missing json key: \(function)", endpoint: displayName)
        }
        return source
    }
}

extension Endpoint {
    /// A database that only `_revs_diff` answers about.
    public var recentWinners: (@Sendable (_ revision: RevisionID, _ id: String) -> Bool)? { nil }

    /// ``recentWinners`` with each text made a revision first.
    public var recentWinnerTexts: ChangeFeedRequest.TargetWinners? {
        guard let winners = recentWinners else { return nil }
        return { text, id in
            guard let revision = RevisionID(utf8: text) else { return false }
            return winners(revision, id)
        }
    }

    /// Reads the given revisions into one array, attachments inline, for answers known to be small.
    public func revisions(_ requests: [MissingRevisions]) async throws(EndpointError) -> [FetchedRevision] {
        var fetched: [FetchedRevision] = []
        try await revisions(requests, staging: .inline) { fetched.append($0) }
        return fetched
    }
}

/// A document id and some of its revisions.
public struct DocumentRevisions: Sendable, Hashable {
    /// The document id.
    public var id: String
    /// Revisions of the document (for a change: its leaves).
    public var revisions: [RevisionID]

    /// An id and its revisions.
    public init(id: String, revisions: [RevisionID]) {
        self.id = id
        self.revisions = revisions
    }
}

/// What one side lacks of a document: the answer of `_revs_diff`, and the request to fetch it.
public struct MissingRevisions: Sendable, Hashable {
    /// The document id.
    public var id: String
    /// Revisions the side lacks.
    public var missing: [RevisionID]
    /// Revisions it has that may be ancestors: their attachments need not be sent again (`atts_since`).
    public var possibleAncestors: [RevisionID]

    /// A document's missing revisions.
    public init(id: String, missing: [RevisionID], possibleAncestors: [RevisionID] = []) {
        self.id = id
        self.missing = missing
        self.possibleAncestors = possibleAncestors
    }
}

/// A revision as read for replication: CouchDB's document JSON with `_revisions`
/// and `_attachments`: stubs for content the target has, and for the rest
/// `"follows": true` with the content in ``files`` (or, from a JSON answer, inline `data`).
public struct ReplicatedRevision: Sendable, Hashable {
    /// The document id.
    public var id: String
    /// The revision.
    public var revision: RevisionID
    /// The document JSON, as `new_edits=false` writes take it.
    public var json: JSON
    /// The content of each attachment marked `"follows": true`, by name.
    public var files: [String: AttachmentFile]

    /// A revision, its JSON and the files of its attachments that follow.
    public init(id: String, revision: RevisionID, json: JSON, files: [String: AttachmentFile] = [:]) {
        self.id = id
        self.revision = revision
        self.json = json
        self.files = files
    }
}

/// One answer of a revision fetch: the revision, or why it could not be read.
public enum FetchedRevision: Sendable {
    /// The revision was read.
    case found(ReplicatedRevision)
    /// The source no longer has the revision (a later edit, a purge): nothing to write, and a
    /// later change in the feed brings whatever the document is now.
    case missing(id: String, revision: RevisionID?)
    /// The revision could not be read: the replication stops before its checkpoint passes it.
    case failed(id: String, revision: RevisionID?, reason: String)
    /// The revision is one no node may store (more attachments than a document may have): it is
    /// counted as a write failure and passed, as CouchDB's replicator passes what its target refuses.
    case refused(id: String, revision: RevisionID?, reason: String)
}

/// A document the target refused to write.
public struct WriteFailure: Sendable, Hashable {
    /// The document id.
    public var id: String
    /// CouchDB's error name (`forbidden`, `unauthorized`, `bad_request`, ...).
    public var error: String
    /// Why.
    public var reason: String

    /// A refused document.
    public init(id: String, error: String, reason: String) {
        self.id = id
        self.error = error
        self.reason = reason
    }
}
