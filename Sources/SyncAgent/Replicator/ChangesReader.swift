import AsyncAlgorithms

/// First stage: reads the source's changes feed (`style=all_docs`, the filter
/// applied at the source, a continuous feed when continuous) and hands each
/// batch to the revision finder. A full pipeline makes it wait.
struct ChangesReader: Sendable {
    let source: any Endpoint
    let request: ChangeFeedRequest
    let progress: ReplicationProgress

    func run(into output: AsyncChannel<ReplicationBatch>) async throws {
        defer { output.finish() }
        try await source.changes(request) { batch in
            progress.read(batch)
            await output.send(ReplicationBatch(changes: batch))
        }
    }
}
