import AsyncAlgorithms
import Logging

/// Last stage: writes the fetched revisions to the target as they are
/// (`new_edits=false`, attachments included). A document the target refuses
/// is counted and logged; the replication goes on.
struct Inserter: Sendable {
    let target: any Endpoint
    let progress: ReplicationProgress
    let logger: Logger

    func run(from input: AsyncChannel<ReplicationBatch>) async throws {
        for await batch in input {
            var revisions: [ReplicatedRevision] = []
            revisions.reserveCapacity(batch.fetched.count)
            for case .found(let revision) in batch.fetched { revisions.append(revision) }
            var failures: [WriteFailure] = []
            if !revisions.isEmpty {
                failures = try await target.write(revisions)
            }
            for failure in failures {
                logger.warning("the target refused a revision", metadata: [
                    "doc": "\(failure.id)", "error": "\(failure.error)", "reason": "\(failure.reason)",
                ])
            }
            progress.inserted(batch, written: revisions.count - failures.count, refused: failures.count)
        }
    }
}
