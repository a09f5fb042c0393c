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
        let source = InspectedEndpoint(LocalEndpoint(pair.a), refusingCheckpointsWith: status)
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
