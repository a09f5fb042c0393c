import AsyncAlgorithms
import Logging

/// Third stage: reads the missing revisions from the source with their
/// history, and only the attachments the target lacks (`_bulk_get`, or
/// `open_revs` where the source has no `_bulk_get`). A large batch is read as
/// a few requests at once, so a remote source can use more than one core.
struct RevisionFetcher: Sendable {
    let source: any Endpoint
    let parallelism: Int
    let logger: Logger

    func run(from input: AsyncChannel<ReplicationBatch>, into output: AsyncChannel<ReplicationBatch>) async throws {
        defer { output.finish() }
        for await var batch in input {
            if !batch.missing.isEmpty {
                batch.fetched = try await fetch(batch.missing)
            }
            for case .failed(let id, let revision, let reason) in batch.fetched {
                logger.warning("cannot read a revision from the source", metadata: [
                    "doc": "\(id)", "rev": "\(revision?.description ?? "?")", "reason": "\(reason)",
                ])
            }
            await output.send(batch)
        }
    }

    /// Reads `missing` in up to `parallelism` requests at once, answers in request order.
    private func fetch(_ missing: [MissingRevisions]) async throws -> [FetchedRevision] {
        let parts = min(max(1, parallelism), missing.count / 50 + 1)
        guard parts > 1 else { return try await source.revisions(missing) }
        let size = (missing.count + parts - 1) / parts
        let chunks = stride(from: 0, to: missing.count, by: size).map { Array(missing[$0..<min($0 + size, missing.count)]) }
        return try await withThrowingTaskGroup(of: (Int, [FetchedRevision]).self) { group in
            for (index, chunk) in chunks.enumerated() {
                group.addTask { (index, try await source.revisions(chunk)) }
            }
            var answers = [[FetchedRevision]](repeating: [], count: chunks.count)
            for try await (index, fetched) in group { answers[index] = fetched }
            return answers.flatMap { $0 }
        }
    }
}
