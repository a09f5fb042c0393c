import Foundation
import JSON
import Store
import SyncAgent
import Testing

/// A source cannot plant a document over the target's `max_document_size`: the target's store
/// refuses that one document, counted as a write failure as CouchDB's replicator counts it, and
/// the rest of the batch is written and checkpointed.
@Suite struct ReplicatedDocumentSizeTests {
    @Test func aDocumentOverTheTargetsBoundIsRefusedAndTheRestReplicate() async throws {
        let directory = FileManager.default.temporaryDirectory.path + "/syncd-docsize-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let source = try Database.open(path: directory + "/source.sqlite", name: "source")
        defer { source.close() }
        var small = Database.Options()
        small.maximumDocumentSize = 1000
        let target = try Database.open(path: directory + "/target.sqlite", name: "target", options: small)
        defer { target.close() }
        try await source.putDocuments(count: 4, prefix: "ok")
        try await source.put(["_id": "big", "text": .string(String(repeating: "b", count: 5000))])

        let replication = ReplicationConfiguration(source: LocalEndpoint(source), target: LocalEndpoint(target))
        let first = await Replicator(replication).run()
        #expect(first.lastError == nil)
        #expect(first.docsWritten == 4)
        #expect(first.docWriteFailures == 1)
        #expect(try target.info().docCount == 4)
        #expect(throws: StoreError.self) { try target.document(id: "big") }
        // The refusal is final: the checkpoint passed it, so the next run has nothing to do.
        let second = await Replicator(replication).run()
        #expect(second.docsRead == 0 && second.docWriteFailures == 0)
    }
}
