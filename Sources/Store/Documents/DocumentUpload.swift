import JSON

/// A document to write, in CouchDB's JSON shape: `_id`, `_rev`, `_deleted`,
/// `_revisions`, `_attachments` and the body's own fields.
///
/// Attachments come inline (`data`, base64), as stubs (`"stub": true`, kept
/// from the parent revision), or — for multipart uploads — as
/// `"follows": true` entries whose content was staged beforehand with
/// ``Database/stageAttachment(_:limit:)`` and is passed in `staged` by name.
public struct DocumentUpload: Sendable {
    /// The document as CouchDB accepts it.
    public var json: JSON
    /// Content for `"follows": true` attachments, by attachment name.
    public var staged: [String: StagedAttachment]
    /// Why a design document's `validate_doc_update` refused it, once judged.
    var refusal: StoreError?

    /// A document with, optionally, staged attachment content.
    public init(_ json: JSON, staged: [String: StagedAttachment] = [:]) {
        self.json = json
        self.staged = staged
    }
}

/// The outcome of writing one document of a bulk request.
public struct WriteResult: Sendable {
    /// The document id (generated if the document had none).
    public let id: String
    /// The new (or, for `new_edits=false`, the inserted) revision, or why the write was refused.
    public let result: Result<RevisionID, StoreError>

    /// The outcome for document `id`.
    public init(id: String, result: Result<RevisionID, StoreError>) {
        self.id = id
        self.result = result
    }
}

/// A validated upload, split into CouchDB's special fields and the body.
struct ParsedDocument: Sendable {
    enum AttachmentInput: Sendable {
        /// Keep the attachment of this name (and, when given, this digest) from an existing revision.
        case stub(digest: String?)
        /// New content: the staged bytes, which are the content or, with
        /// `encoding`, its encoded form (`length` then being the decoded length).
        case content(StagedAttachment, contentType: String, revpos: Int?, encoding: (name: String, length: Int)? = nil)
    }

    var id: String?
    var revision: RevisionID?
    /// `_revisions`, newest first; empty if not given.
    var history: [RevisionID]
    var deleted: Bool
    /// The body's own members as stored: compact JSON in canonical form
    /// (members sorted by key), the form revision digests are computed over.
    var bodyText: [UInt8]
    var attachments: [(name: String, input: AttachmentInput)]
    /// The first revision, prepared in advance for a document that is probably new.
    var creation: DocumentUpdate.Creation?
    var isLocal: Bool { id?.hasPrefix("_local/") ?? false }

    /// Whether attachments are kept from an existing revision: such a write
    /// cannot be a document's first revision.
    var hasStubs: Bool {
        attachments.contains { if case .stub = $0.input { true } else { false } }
    }

    /// The staged files this document holds pinned.
    var staged: [StagedAttachment] {
        attachments.compactMap { if case .content(let staged, _, _, _) = $0.input { staged } else { nil } }
    }
}
