import Foundation
import JSON
import Store
import SyncAgent
import Testing

/// The replicator's counts are CouchDB's `_scheduler/jobs` counts (docs_read,
/// docs_written, doc_write_failures, changes_pending), each change and each
/// revision counted once however many sessions a replication takes.
@Suite struct ReplicationCountsTests {
    @Test func aTargetThatGoesAwayMidReplicationIsCountedOnce() async throws {
        let pair = try LocalPair()
        defer { pair.close() }
        try await pair.a.putDocuments(count: 1000, prefix: "doc")
        // The target fails everything for a moment after 300 documents: the session dies
        // without saving a checkpoint, and the next one starts again from the beginning.
        let target = VanishingEndpoint(LocalEndpoint(pair.b), afterWrites: 3, failures: 4)
        var configuration = ReplicationConfiguration(source: LocalEndpoint(pair.a), target: target)
        configuration.batchSize = 100
        configuration.checkpointInterval = .seconds(3600)
        configuration.retry = RetryPolicy(initialDelay: .milliseconds(10), maximumDelay: .milliseconds(50), oneShotAttempts: 10)
        let status = await Replicator(configuration).run()
        #expect(target.failed >= 2, "the target must really have gone away")
        #expect(status.lastError == nil)
        #expect(status.completed == 1000)
        #expect(status.total == 1000)
        #expect(status.docsRead == 1000)
        #expect(status.docsWritten == 1000)
        #expect(status.docWriteFailures == 0)
        #expect(status.changesPending == 0)
        #expect(try pair.b.info().docCount == 1000)
    }
}

/// Wraps an endpoint that goes away once: after `afterWrites` writes, its next
/// `failures` writes, `_revs_diff`s and checkpoint saves fail as a vanished peer's would.
final class VanishingEndpoint: ForwardingEndpoint, @unchecked Sendable {
    let inner: any Endpoint
    private let lock = NSLock()
    private var writesLeft: Int
    private var failuresLeft: Int
    private var failures = 0

    init(_ inner: any Endpoint, afterWrites: Int, failures: Int) {
        self.inner = inner
        writesLeft = afterWrites
        failuresLeft = failures
    }

    /// How many requests failed.
    var failed: Int { lock.withLock { failures } }

    private func mayFail(writing: Bool = false) throws(EndpointError) {
        let fail = lock.withLock { () -> Bool in
            if writing, writesLeft > 0 {
                writesLeft -= 1
                return false
            }
            guard writesLeft == 0, failuresLeft > 0 else { return false }
            failuresLeft -= 1
            failures += 1
            return true
        }
        if fail { throw EndpointError(status: 0, error: "unreachable", reason: "connection refused", endpoint: "test") }
    }

    func putLocalDocument(id: String, _ json: JSON) async throws(EndpointError) -> String {
        try mayFail()
        return try await inner.putLocalDocument(id: id, json)
    }
    func missingRevisions(_ revisions: [DocumentRevisions]) async throws(EndpointError) -> [MissingRevisions] {
        try mayFail()
        return try await inner.missingRevisions(revisions)
    }
    func write(_ revisions: [ReplicatedRevision]) async throws(EndpointError) -> [WriteFailure] {
        try mayFail(writing: true)
        return try await inner.write(revisions)
    }
}

/// A source that refuses every sequence but 0, as CouchDB 3.5 and syncd refuse a
/// `since` they never issued (a database restored from an older copy).
final class RestoredSource: ForwardingEndpoint, @unchecked Sendable {
    let inner: any Endpoint
    init(_ inner: any Endpoint) { self.inner = inner }

    func changes(_ request: ChangeFeedRequest, deliver: @Sendable (ChangeBatch) async throws -> Void) async throws {
        guard request.since == .zero else {
            throw EndpointError(status: 400, error: "bad_request", reason: "Malformed sequence supplied in 'since' parameter.", endpoint: "test")
        }
        try await inner.changes(request, deliver: deliver)
    }
}

extension ReplicationCountsTests {
    /// A checkpoint the source does not know (it answers 400 to `since`) makes the
    /// replicator read from the start, not fail for good.
    @Test func aSourceThatRefusesTheCheckpointSequenceIsReadFromTheStart() async throws {
        let pair = try LocalPair()
        defer { pair.close() }
        try await pair.a.putDocuments(count: 30, prefix: "doc")
        #expect(await pair.replicate(from: pair.a, to: pair.b).docsWritten == 30)
        try await pair.a.putDocuments(count: 5, prefix: "more")
        var configuration = ReplicationConfiguration(source: RestoredSource(LocalEndpoint(pair.a)), target: LocalEndpoint(pair.b))
        configuration.retry = RetryPolicy(initialDelay: .milliseconds(10), maximumDelay: .milliseconds(50), oneShotAttempts: 2)
        let status = await Replicator(configuration).run()
        #expect(status.lastError == nil)
        #expect(status.docsWritten == 5)
        #expect(status.completed == 35)
        #expect(try pair.b.info().docCount == 35)
    }
}
