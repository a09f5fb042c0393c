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
                try await retryFailures(in: &batch)
            }
            for case .failed(let id, let revision, let reason) in batch.fetched {
                logger.warning("cannot read a revision from the source", metadata: [
                    "doc": "\(id)", "rev": "\(revision?.description ?? "?")", "reason": "\(reason)",
                ])
            }
            for case .missing(let id, let revision) in batch.fetched {
                logger.info("a revision is gone from the source since the diff", metadata: [
                    "doc": "\(id)", "rev": "\(revision?.description ?? "?")",
                ])
            }
            await output.send(batch)
        }
    }

    /// Reads the revisions that failed once more; one that fails again stops the replication,
    /// so no checkpoint passes a revision that was neither written nor refused by the target.
    private func retryFailures(in batch: inout ReplicationBatch) async throws {
        var failedIDs = Set<String>()
        for case .failed(let id, _, _) in batch.fetched { failedIDs.insert(id) }
        guard !failedIDs.isEmpty else { return }
        let again = try await source.revisions(batch.missing.filter { failedIDs.contains($0.id) })
        for case .failed(let id, let revision, let reason) in again {
            throw EndpointError.badResponse(source.displayName,
                                            "cannot read \(id) \(revision?.description ?? "") from the source: \(reason)")
        }
        batch.fetched = batch.fetched.filter { if case .failed = $0 { false } else { true } } + again
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
