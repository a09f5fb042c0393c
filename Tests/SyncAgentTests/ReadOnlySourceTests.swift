import Foundation
import Store
import SyncAgent
import Testing

/// A source that refuses checkpoint writes (a read-only source) is replicated
/// all the same, with the checkpoint kept on the target alone.
@Suite struct ReadOnlySourceTests {
    @Test(arguments: [401, 403])
    func replicationGoesOnAndResumesFromTheTargetsCheckpoint(status: Int) async throws {
        let pair = try LocalPair()
        defer { pair.close() }
        try await pair.a.putDocuments(count: 120, prefix: "doc")
        let source = ReadOnlyEndpoint(LocalEndpoint(pair.a), refusal: status)
        func replicate() async -> ReplicationStatus {
            var configuration = ReplicationConfiguration(source: source, target: LocalEndpoint(pair.b))
            configuration.batchSize = 50
            return await Replicator(configuration).run()
        }
        let first = await replicate()
        #expect(first.lastError == nil)
        #expect(first.docsWritten == 120)
        #expect(first.checkpointOnTargetOnly)
        #expect(try pair.b.info().docCount == 120)

        try await pair.a.putDocuments(count: 5, prefix: "more")
        let second = await replicate()
        #expect(second.lastError == nil)
        #expect(second.checkpointOnTargetOnly)
        #expect(second.docsRead == 5, "resumed from the target's checkpoint")
        try await ReplicationTesting.expectSameDocuments(pair.a, pair.b)
    }

    @Test func aWritableSourceKeepsCheckpointsOnBothSides() async throws {
        let pair = try LocalPair()
        defer { pair.close() }
        try await pair.a.putDocuments(count: 10, prefix: "doc")
        let status = await pair.replicate(from: pair.a, to: pair.b)
        #expect(status.lastError == nil)
        #expect(!status.checkpointOnTargetOnly)
    }
}

/// A source whose checkpoint writes are refused with `refusal` (401 or 403), as a
/// read-only CouchDB database or a proxy allowing only reads answers them.
struct ReadOnlyEndpoint: Endpoint {
    let inner: LocalEndpoint
    let refusal: Int

    init(_ inner: LocalEndpoint, refusal: Int) {
        self.inner = inner
        self.refusal = refusal
    }

    var displayName: String { inner.displayName }
    var isLocal: Bool { inner.isLocal }
    func prepare(createIfMissing: Bool) async throws(EndpointError) { try await inner.prepare(createIfMissing: createIfMissing) }
    func identity() async throws(EndpointError) -> String { try await inner.identity() }
    func localDocument(id: String) async throws(EndpointError) -> JSON? { try await inner.localDocument(id: id) }
    func putLocalDocument(id: String, _ json: JSON) async throws(EndpointError) -> String {
        throw EndpointError(status: refusal, error: refusal == 401 ? "unauthorized" : "forbidden", reason: "read-only", endpoint: displayName)
    }
    func changes(_ request: ChangeFeedRequest, deliver: @Sendable (ChangeBatch) async throws -> Void) async throws {
        try await inner.changes(request, deliver: deliver)
    }
    func missingRevisions(_ revisions: [DocumentRevisions]) async throws(EndpointError) -> [MissingRevisions] {
        try await inner.missingRevisions(revisions)
    }
    func revisions(_ requests: [MissingRevisions]) async throws(EndpointError) -> [FetchedRevision] {
        try await inner.revisions(requests)
    }
    func write(_ revisions: [ReplicatedRevision]) async throws(EndpointError) -> [WriteFailure] {
        try await inner.write(revisions)
    }
    func ensureFullCommit() async throws(EndpointError) { try await inner.ensureFullCommit() }
}
