/// Why the store refused a request, in CouchDB's terms: `error` and `reason`
/// are what CouchDB puts in its JSON error body, and `kind` says which HTTP
/// answer a server gives for it.
///
/// A refused write changes nothing that was stored.
public struct StoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The class of failure, one per CouchDB status code.
    public enum Kind: Sendable, Hashable {
        /// 400: the request itself is malformed.
        case badRequest
        /// 401: the write needs credentials it was not made with (a validation function's `unauthorized`).
        case unauthorized
        /// 403: the write is not allowed (a validation function's `forbidden`).
        case forbidden
        /// 404: no such document, revision, attachment or database.
        case notFound
        /// 409: the revision given is not a current leaf.
        case conflict
        /// 412: the database already exists.
        case preconditionFailed
        /// 413: the document or attachment is larger than allowed.
        case tooLarge
        /// 507: the disk (or the owner's quota) is full; nothing of the write was kept.
        case insufficientStorage
        /// 500: the store failed (I/O, SQLite).
        case `internal`
    }

    /// The class of failure.
    public let kind: Kind
    /// CouchDB's error name, such as `conflict` or `illegal_docid`.
    public let error: String
    /// A human-readable reason.
    public let reason: String

    /// An error of `kind` with CouchDB's `error` name and a `reason`.
    public init(_ kind: Kind, error: String, reason: String) {
        self.kind = kind
        self.error = error
        self.reason = reason
    }

    public var description: String { "\(error): \(reason)" }

    /// 400 bad_request.
    public static func badRequest(_ reason: String) -> StoreError { StoreError(.badRequest, error: "bad_request", reason: reason) }
    /// 404 not_found; CouchDB's reasons are `missing` and `deleted`.
    public static func notFound(_ reason: String = "missing") -> StoreError { StoreError(.notFound, error: "not_found", reason: reason) }
    /// 409 conflict.
    public static let conflict = StoreError(.conflict, error: "conflict", reason: "Document update conflict.")
    /// 400 illegal_docid.
    public static func illegalDocID(_ reason: String) -> StoreError { StoreError(.badRequest, error: "illegal_docid", reason: reason) }
    /// 413 document_too_large.
    public static func tooLarge(_ reason: String) -> StoreError { StoreError(.tooLarge, error: "document_too_large", reason: reason) }
    /// 413 document_too_large for a body over the size limit: CouchDB's reason is the document's id.
    public static func documentTooLarge(id: String) -> StoreError { StoreError(.tooLarge, error: "document_too_large", reason: id) }
    /// 413 attachment_too_large: CouchDB's reason is the attachment's name.
    public static func attachmentTooLarge(name: String) -> StoreError { StoreError(.tooLarge, error: "attachment_too_large", reason: name) }
    /// 507 insufficient_storage: a write failed for want of disk space (`ENOSPC`, `EDQUOT`, `SQLITE_FULL`).
    public static func insufficientStorage(_ reason: String) -> StoreError {
        StoreError(.insufficientStorage, error: "insufficient_storage", reason: reason)
    }
    /// The task asking was cancelled (its client went away, the server is stopping): a long read stopped early.
    public static let cancelled = StoreError(.internal, error: "cancelled", reason: "The request was cancelled.")
    /// 500 with the underlying cause.
    public static func `internal`(_ reason: String) -> StoreError { StoreError(.internal, error: "internal_server_error", reason: reason) }
}
