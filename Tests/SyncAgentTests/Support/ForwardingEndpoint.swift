import JSON
import Store
import SyncAgent

/// A test endpoint wrapped around another: every call goes to `inner` unless the wrapper
/// implements it, so a wrapper holds only the calls it changes (a failure, a record).
protocol ForwardingEndpoint: Endpoint {
    /// The endpoint calls are passed to.
    var inner: any Endpoint { get }
}

extension ForwardingEndpoint {
    var displayName: String { inner.displayName }
    var isLocal: Bool { inner.isLocal }
    func prepare(createIfMissing: Bool) async throws(EndpointError) { try await inner.prepare(createIfMissing: createIfMissing) }
    func identity() async throws(EndpointError) -> String { try await inner.identity() }
    func filterFunction(_ name: String) async throws(EndpointError) -> String { try await inner.filterFunction(name) }
    func localDocument(id: String) async throws(EndpointError) -> JSON? { try await inner.localDocument(id: id) }
    func putLocalDocument(id: String, _ json: JSON) async throws(EndpointError) -> String { try await inner.putLocalDocument(id: id, json) }
    func changes(_ request: ChangeFeedRequest, deliver: @Sendable (ChangeBatch) async throws -> Void) async throws {
        try await inner.changes(request, deliver: deliver)
    }
    func missingRevisions(_ revisions: [DocumentRevisions]) async throws(EndpointError) -> [MissingRevisions] {
        try await inner.missingRevisions(revisions)
    }
    var recentWinners: (@Sendable (_ revision: RevisionID, _ id: String) -> Bool)? { inner.recentWinners }
    func revisions(_ requests: [MissingRevisions], staging: AttachmentStaging,
                   deliver: (FetchedRevision) async -> Void) async throws(EndpointError) {
        try await inner.revisions(requests, staging: staging, deliver: deliver)
    }
    func attachmentStaging() async throws(EndpointError) -> AttachmentStaging { try await inner.attachmentStaging() }
    func write(_ revisions: [ReplicatedRevision]) async throws(EndpointError) -> [WriteFailure] { try await inner.write(revisions) }
    func ensureFullCommit() async throws(EndpointError) { try await inner.ensureFullCommit() }
}
