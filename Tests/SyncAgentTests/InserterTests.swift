import AsyncAlgorithms
import JSON
import Locking
import Logging
import Store
@testable import SyncAgent
import XCTest

/// The inserter writes what was fetched, except what the target has as its winner by now.
final class InserterTests: XCTestCase {
    /// A target that records the documents it is asked to write.
    private struct RecordingTarget: ForwardingEndpoint {
        let inner: any Endpoint
        let written = Locked<[String]>([])

        func write(_ revisions: [ReplicatedRevision]) async throws(EndpointError) -> [WriteFailure] {
            written.withLock { $0 += revisions.map(\.id) }
            return try await inner.write(revisions)
        }
    }

    /// In a group a new document comes from every member at once: a revision another
    /// replication wrote since this one's diff is counted as read and not written again.
    func testARevisionWrittenSinceTheDiffIsNotWrittenAgain() async throws {
        let directory = try TemporaryDirectory(prefix: "syncd-inserter")
        let catalog = try Catalog(directory: directory.path)
        defer { catalog.close(); directory.remove() }
        let target = try catalog.create("target")
        let other = try catalog.create("other")
        let written = try await other.put(["_id": "a", "n": 1]).result.get()
        let fresh = try await other.put(["_id": "b", "n": 2]).result.get()
        func replicated(_ id: String, _ revision: RevisionID) throws -> ReplicatedRevision {
            ReplicatedRevision(id: id, revision: revision, json: try other.document(id: id).json(.revisions))
        }
        // Another replication writes `a` after this one found it missing.
        for failure in try await LocalEndpoint(target).write([try replicated("a", written)]) { XCTFail("\(failure)") }

        let recording = RecordingTarget(inner: LocalEndpoint(target))
        let progress = ReplicationProgress()
        let channel = AsyncChannel<ReplicationBatch>()
        var batch = ReplicationBatch(changes: ChangeBatch(changes: [], lastSequence: .zero, pending: nil, caughtUp: true))
        batch.fetched = [.found(try replicated("a", written)), .found(try replicated("b", fresh))]
        progress.read(batch.changes)
        Task {
            await channel.send(batch)
            channel.finish()
        }
        try await Inserter(target: recording, progress: progress, logger: Logger(label: "test")).run(from: channel)
        XCTAssertEqual(recording.written.withLock { $0 }, ["b"])
        XCTAssertEqual(progress.status.docsRead, 2)
        XCTAssertEqual(progress.status.docsWritten, 1)
        XCTAssertEqual(try target.document(id: "b").revision, fresh)
    }
}
