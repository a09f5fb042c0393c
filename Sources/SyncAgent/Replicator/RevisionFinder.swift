import AsyncAlgorithms
import Store

/// Second stage: takes what the reader has queued, up to a batch, whenever it is
/// ready for more, and asks the target which of the batch's leaf revisions it
/// lacks (`_revs_diff`), so only those are fetched. With ``RevisionClaims`` shared
/// by the replications into the target, it claims them first (see ``claimMissing``).
struct RevisionFinder: Sendable {
    let target: any Endpoint
    let batchSize: Int
    let progress: ReplicationProgress
    /// The target's claims, and who this run claims as.
    var claims: (RevisionClaims, RevisionClaims.Owner)?

    func run(from input: ChangeQueue, into output: AsyncChannel<ReplicationBatch>) async throws {
        defer { output.finish() }
        while let changes = try await input.take(upTo: batchSize) {
            progress.read(changes)
            var batch = ReplicationBatch(changes: changes)
            let question = Self.leaves(of: batch.changes.changes)
            if let (claims, owner) = claims, !question.isEmpty {
                try await claimMissing(question, of: &batch, in: claims, as: owner, into: output)
            } else if !question.isEmpty {
                batch.missing = try await target.missingRevisions(question)
                batch.missingFound = Self.count(batch.missing)
            }
            await output.send(batch)
        }
    }

    /// Asks the target what it lacks of `question` and claims what must be fetched for `batch`
    /// (a small new document the feed carried has crossed already: it is written as it came,
    /// unclaimed, without waiting). What another run is fetching is left to it: the rest goes on
    /// at once as a part that does not complete the batch, and the target is asked again about
    /// the held revisions once they are let go of; if some were written since the question, it
    /// is asked again at once. After ``RevisionClaims/longestWait`` in all, the batch fetches
    /// the held revisions too.
    private func claimMissing(
        _ question: [DocumentRevisions], of batch: inout ReplicationBatch, in claims: RevisionClaims,
        as owner: RevisionClaims.Owner, into output: AsyncChannel<ReplicationBatch>
    ) async throws {
        var question = question
        let deadline = ContinuousClock.now + claims.longestWait
        while true {
            let asked = claims.writes
            var probe = batch
            probe.missing = try await target.missingRevisions(question)
            if batch.missingFound == 0 { batch.missingFound = Self.count(probe.missing) }
            let toFetch = RevisionFetcher.carried(probe).toRead
            let fetched = Set(toFetch.map(\.id))
            let carried = probe.missing.filter { !fetched.contains($0.id) }
            guard case .claimed(let ticket, var free, let held) = claims.claim(toFetch, by: owner, asked: asked) else {
                question = Self.question(probe.missing)
                continue
            }
            free += carried
            if held.isEmpty || ContinuousClock.now >= deadline {
                batch.missing = free + held
                batch.claim = ticket
                return
            }
            if !free.isEmpty {
                var part = batch
                part.missing = free
                part.claim = ticket
                part.isLastPart = false
                await output.send(part)
            }
            let revisions = RevisionClaims.revisions(of: held)
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await claims.waitUntilFree(revisions) }
                group.addTask { try? await Task.sleep(until: deadline, clock: .continuous) }
                await group.next()
                group.cancelAll()
            }
            try Task.checkCancellation()
            question = Self.question(held)
        }
    }

    /// How many revisions `missing` names.
    private static func count(_ missing: [MissingRevisions]) -> Int {
        missing.reduce(0) { $0 + $1.missing.count }
    }

    /// `missing` as a question to the target.
    private static func question(_ missing: [MissingRevisions]) -> [DocumentRevisions] {
        missing.map { DocumentRevisions(id: $0.id, revisions: $0.missing) }
    }

    /// Each document's leaves once, in feed order (a continuous feed may name a document twice in a batch).
    static func leaves(of changes: [ChangedDocument]) -> [DocumentRevisions] {
        var leaves: [DocumentRevisions] = []
        leaves.reserveCapacity(changes.count)
        var position: [String: Int] = Dictionary(minimumCapacity: changes.count)
        for change in changes {
            let index: Int
            if let known = position[change.id] {
                index = known
            } else {
                index = leaves.count
                position[change.id] = index
                leaves.append(DocumentRevisions(id: change.id, revisions: []))
            }
            for revision in change.revisions where !leaves[index].revisions.contains(revision) {
                leaves[index].revisions.append(revision)
            }
        }
        return leaves
    }
}
