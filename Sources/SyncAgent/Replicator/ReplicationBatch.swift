import Store

/// A batch of changes on its way through the pipeline; each stage fills in its part.
struct ReplicationBatch: Sendable {
    /// What the changes reader read.
    var changes: ChangeBatch
    /// What the target lacks (the revision finder's answer).
    var missing: [MissingRevisions] = []
    /// The missing revisions as read from the source (the fetcher's answer), or the part of them
    /// this part of the batch carries.
    var fetched: [FetchedRevision] = []
    /// Whether this is the batch's last part. The fetcher passes a batch whose revisions
    /// pass its budget on in parts; only the last completes the batch (its changes are
    /// counted and the checkpoint may pass them once it is written).
    var isLastPart = true

    /// How many revisions the batch asks the target about.
    var revisionCount: Int { changes.changes.reduce(0) { $0 + $1.revisions.count } }
}
