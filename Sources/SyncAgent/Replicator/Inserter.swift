import AsyncAlgorithms
import Logging

/// Last stage: writes the fetched revisions to the target as they are
/// (`new_edits=false`, attachments included). A document the target refuses
/// is counted and logged; the replication goes on. A batch may come in parts:
/// its counts are reported, and it completes, with its last part. A part's
/// claims (``RevisionClaims``) are let go of once it is written. A revision the target
/// has as its winner by now (another replication wrote it since the diff: in a group, a new
/// document comes from every member at once) is not written again.
struct Inserter: Sendable {
    let target: any Endpoint
    let progress: ReplicationProgress
    let logger: Logger

    func run(from input: AsyncChannel<ReplicationBatch>) async throws {
        var counts = ReplicationProgress.InsertedCounts()
        let targetWinners = target.recentWinners
        for await part in input {
            var revisions: [ReplicatedRevision] = []
            revisions.reserveCapacity(part.fetched.count)
            var writtenSince = 0
            for fetched in part.fetched {
                switch fetched {
                case .found(let revision):
                    if let targetWinners, targetWinners(revision.revision, revision.id) {
                        writtenSince += 1
                    } else {
                        revisions.append(revision)
                    }
                case .missing: break
                case .failed: counts.unreadable += 1
                case .refused(let id, _, let reason):
                    logger.warning("the source sent a revision no node may store", metadata: ["doc": "\(id)", "reason": "\(reason)"])
                    counts.read += 1
                    counts.refused += 1
                }
            }
            var failures: [WriteFailure] = []
            if !revisions.isEmpty {
                failures = try await target.write(revisions)
            }
            counts.read += writtenSince
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
