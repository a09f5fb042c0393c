import Store

/// A batch of changes on its way through the pipeline; each stage fills in its part.
struct ReplicationBatch: Sendable {
    /// What the changes reader read.
    var changes: ChangeBatch
    /// What the target lacks (the revision finder's answer).
    var missing: [MissingRevisions] = []
    /// How many revisions the target lacked when first asked. Each part carries the whole
    /// batch's figure (a claim may leave a part only some of `missing`); the last counts it.
    var missingFound = 0
    /// The missing revisions as read from the source (the fetcher's answer), or the part of them
    /// this part of the batch carries.
    var fetched: [FetchedRevision] = []
    /// Whether this is the batch's last part. The finder passes on first the revisions no other
    /// replication is fetching, and the fetcher a batch whose revisions pass its budget, in
    /// parts; only the last completes the batch (its changes are counted and the checkpoint
    /// may pass them once it is written).
    var isLastPart = true
    /// The revisions this part claimed (``RevisionClaims``), let go of once it is written. The
    /// fetcher splits a part it reads into smaller ones; the last of them carries the claim.
    var claim: RevisionClaims.Ticket?

    /// How many revisions the batch checks with the target (a change left out as already held names one).
    var revisionCount: Int { changes.changes.reduce(changes.alreadyHeld) { $0 + $1.revisions.count } }
}
