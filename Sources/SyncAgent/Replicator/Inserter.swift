import AsyncAlgorithms
import Logging

/// Last stage: writes the fetched revisions to the target as they are
/// (`new_edits=false`, attachments included). A document the target refuses
/// is counted and logged; the replication goes on. A batch may come in parts:
/// its counts are reported, and it completes, with its last part. A part's
/// claims (``RevisionClaims``) are let go of once it is written.
struct Inserter: Sendable {
    let target: any Endpoint
    let progress: ReplicationProgress
    let logger: Logger

    func run(from input: AsyncChannel<ReplicationBatch>) async throws {
        var counts = ReplicationProgress.InsertedCounts()
        for await part in input {
            var revisions: [ReplicatedRevision] = []
            revisions.reserveCapacity(part.fetched.count)
            for fetched in part.fetched {
                switch fetched {
                case .found(let revision): revisions.append(revision)
                case .missing: break
                case .failed: counts.unreadable += 1
                }
            }
            var failures: [WriteFailure] = []
            if !revisions.isEmpty {
                failures = try await target.write(revisions)
            }
            for failure in failures {
                logger.warning("the target refused a revision", metadata: [
                    "doc": "\(failure.id)", "error": "\(failure.error)", "reason": "\(failure.reason)",
                ])
            }
            counts.read += revisions.count
            counts.written += revisions.count - failures.count
            counts.refused += failures.count
            part.claim?.release()
            guard part.isLastPart else { continue }
            progress.inserted(part, counts)
            counts = ReplicationProgress.InsertedCounts()
        }
    }
}
