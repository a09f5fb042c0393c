import AsyncAlgorithms
import Store

/// Second stage: takes what the reader has queued, up to a batch, whenever it is
/// ready for more, and asks the target which of the batch's leaf revisions it
/// lacks (`_revs_diff`), so only those are fetched.
struct RevisionFinder: Sendable {
    let target: any Endpoint
    let batchSize: Int
    let progress: ReplicationProgress

    func run(from input: ChangeQueue, into output: AsyncChannel<ReplicationBatch>) async throws {
        defer { output.finish() }
        while let changes = try await input.take(upTo: batchSize) {
            progress.read(changes)
            var batch = ReplicationBatch(changes: changes)
            let question = Self.leaves(of: batch.changes.changes)
            if !question.isEmpty {
                batch.missing = try await target.missingRevisions(question)
            }
            await output.send(batch)
        }
    }

    /// Each document's leaves once, in feed order (a continuous feed may name a document twice in a batch).
    static func leaves(of changes: [ChangedDocument]) -> [DocumentRevisions] {
        var order: [String] = []
        var revisions: [String: [RevisionID]] = [:]
        for change in changes {
            if revisions[change.id] == nil { order.append(change.id) }
            for revision in change.revisions where !(revisions[change.id]?.contains(revision) ?? false) {
                revisions[change.id, default: []].append(revision)
            }
        }
        return order.map { DocumentRevisions(id: $0, revisions: revisions[$0] ?? []) }
    }
}
