import Foundation
import Store
import SyncAgent
import Testing

/// A batch whose revisions pass the fetcher's budget (16 MiB) goes to the target in
/// parts, and only its last part completes it: counted once, and checkpointed only
/// once every part is written.
struct RevisionPartsTests {
    /// `count` documents with an attachment of `size` bytes each: by default, one batch of about 28 MiB of JSON.
    private func largeDocuments(in database: Database, count: Int = 20, size: Int = 1 << 20) async throws {
        let block = ReplicationTesting.randomBytes(size)
        for n in 0..<count {
            var content = block
            content.replaceSubrange(0..<8, with: withUnsafeBytes(of: UInt64(n)) { Array($0) })
            try await database.put([
                "_id": .string("big\(n)"),
                "_attachments": ["blob": ["content_type": "application/octet-stream", "data": .string(Data(content).base64EncodedString())]],
            ])
        }
    }

    @Test func aBatchOverTheBudgetIsWrittenInPartsAndCountedOnce() async throws {
        let pair = try LocalPair()
        defer { pair.close() }
        try await largeDocuments(in: pair.a)
        let target = PartRecordingEndpoint(LocalEndpoint(pair.b))
        var configuration = ReplicationConfiguration(source: LocalEndpoint(pair.a), target: target)
        configuration.batchSize = 100
        let status = await Replicator(configuration).run()
        #expect(status.lastError == nil)
        #expect(target.writes.count >= 2, "one batch, written in \(target.writes) revisions")
        #expect(target.writes.reduce(0, +) == 20)
        #expect(status.docsWritten == 20)
        #expect(status.docsRead == 20)
        #expect(status.completed == 20)
        try await ReplicationTesting.expectSameDocuments(pair.a, pair.b)
        for n in [0, 13, 19] {
            let id = "big\(n)"
            #expect(try pair.b.attachmentContent(try pair.b.attachment(documentID: id, name: "blob"))
                == pair.a.attachmentContent(try pair.a.attachment(documentID: id, name: "blob")))
        }
    }

    /// With parallel fetches, each request passes its own parts on; the batch still completes once.
    @Test func parallelFetchesPassTheirPartsOnAndCompleteTheBatchOnce() async throws {
        let pair = try LocalPair()
        defer { pair.close() }
        try await largeDocuments(in: pair.a, count: 150, size: 512 << 10)
        let target = PartRecordingEndpoint(LocalEndpoint(pair.b))
        var configuration = ReplicationConfiguration(source: LocalEndpoint(pair.a), target: target)
        configuration.batchSize = 500
        configuration.parallelFetches = 4
        let status = await Replicator(configuration).run()
        #expect(status.lastError == nil)
        #expect(target.writes.count >= 4, "one batch, written in \(target.writes) revisions")
        #expect(target.writes.reduce(0, +) == 150)
        #expect(status.docsWritten == 150)
        #expect(status.completed == 150)
        try await ReplicationTesting.expectSameDocuments(pair.a, pair.b)
    }

    /// The target fails after the first part: the replication stops, and neither the
    /// checkpoint nor the counts pass the batch whose first part was written.
    @Test func aBatchWhoseLaterPartFailsIsNeitherCheckpointedNorCounted() async throws {
        let pair = try LocalPair()
        defer { pair.close() }
        try await largeDocuments(in: pair.a)
        let target = PartRecordingEndpoint(LocalEndpoint(pair.b), failingAfterFirstWrite: true)
        var configuration = ReplicationConfiguration(source: LocalEndpoint(pair.a), target: target)
        configuration.batchSize = 100
        configuration.retry = RetryPolicy(initialDelay: .milliseconds(10), maximumDelay: .milliseconds(10), oneShotAttempts: 2)
        let status = await Replicator(configuration).run()
        #expect(status.lastError?.reason == "the test's target fails")
        #expect(target.writes.count >= 2)
        #expect(status.checkpointedSequence == .zero)
        #expect(status.completed == 0)
        #expect(status.docsWritten == 0)
    }

    /// A revision the source cannot give, read after a part went on, is read again at the
    /// batch's end; failing twice, it stops the replication before any checkpoint passes it.
    @Test func aRevisionThatFailsTwiceAfterAPartWentOnStopsTheReplication() async throws {
        let pair = try LocalPair()
        defer { pair.close() }
        try await largeDocuments(in: pair.a)
        let source = PartRecordingEndpoint(LocalEndpoint(pair.a), unreadable: "big19")
        let target = PartRecordingEndpoint(LocalEndpoint(pair.b))
        var configuration = ReplicationConfiguration(source: source, target: target)
        configuration.batchSize = 100
        configuration.retry = RetryPolicy(initialDelay: .milliseconds(10), maximumDelay: .milliseconds(10), oneShotAttempts: 2)
        let status = await Replicator(configuration).run()
        #expect(status.lastError?.reason.contains("cannot read big19") == true, "\(String(describing: status.lastError))")
        #expect(target.writes.count >= 1, "a part went on before the failure")
        #expect(status.checkpointedSequence == .zero)
        #expect(status.completed == 0)
        #expect(throws: StoreError.self) { try pair.b.document(id: "big19") }
    }
}

/// Wraps an endpoint: as a target, records how many revisions each write carries (one write
/// per part) and, when asked, fails every write after the first; as a source, can never
/// give one document.
private final class PartRecordingEndpoint: ForwardingEndpoint, @unchecked Sendable {
    let inner: any Endpoint
    let failingAfterFirstWrite: Bool
    let unreadable: String?
    private let lock = NSLock()
    private var counts: [Int] = []

    init(_ inner: any Endpoint, failingAfterFirstWrite: Bool = false, unreadable: String? = nil) {
        self.inner = inner
        self.failingAfterFirstWrite = failingAfterFirstWrite
        self.unreadable = unreadable
    }

    var writes: [Int] { lock.withLock { counts } }

    func revisions(_ requests: [MissingRevisions], staging: AttachmentStaging, deliver: (FetchedRevision) async -> Void) async throws(EndpointError) {
        try await inner.revisions(requests, staging: staging) { revision in
            if case .found(let found) = revision, found.id == unreadable {
                await deliver(.failed(id: found.id, revision: found.revision, reason: "disk read failed"))
            } else {
                await deliver(revision)
            }
        }
    }
    func write(_ revisions: [ReplicatedRevision]) async throws(EndpointError) -> [WriteFailure] {
        let count = lock.withLock {
            counts.append(revisions.count)
            return counts.count
        }
        if failingAfterFirstWrite && count > 1 {
            throw EndpointError(status: 503, error: "service_unavailable", reason: "the test's target fails", endpoint: displayName)
        }
        return try await inner.write(revisions)
    }
}
