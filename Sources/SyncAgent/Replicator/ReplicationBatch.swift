import Store

/// A batch of changes on its way through the pipeline; each stage fills in its part.
struct ReplicationBatch: Sendable {
    /// What the changes reader read.
    var changes: ChangeBatch
    /// What the target lacks (the revision finder's answer).
    var missing: [MissingRevisions] = []
    /// The missing revisions as read from the source (the fetcher's answer).
    var fetched: [FetchedRevision] = []

    /// How many revisions the batch asks the target about.
    var revisionCount: Int { changes.changes.reduce(0) { $0 + $1.revisions.count } }
}
