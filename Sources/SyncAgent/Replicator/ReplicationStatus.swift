/// What a replication is doing, as Couchbase Lite defines the states.
public enum ReplicationActivity: String, Sendable, Hashable {
    /// Not running: finished (one-shot), stopped by its owner, or failed for good (see the last error).
    case stopped
    /// Waiting to retry: a side could not be reached.
    case offline
    /// Continuous and caught up: waiting for new changes.
    case idle
    /// Connecting or transferring changes.
    case active
}

/// A replication's state and progress at one moment.
public struct ReplicationStatus: Sendable, Hashable {
    /// What it is doing.
    public var activity: ReplicationActivity = .stopped
    /// Changes processed (written, already present, or failed).
    public var completed = 0
    /// Changes known so far: processed, in flight, and still pending at the source.
    public var total = 0
    /// Revisions read from the source.
    public var docsRead = 0
    /// Revisions written to the target.
    public var docsWritten = 0
    /// Revisions that could not be read or written; the replication went on without them.
    public var docWriteFailures = 0
    /// Leaf revisions of the source's changes asked about at the target (CouchDB's `revisions_checked`).
    public var revisionsChecked = 0
    /// Of those, the ones the target lacked (CouchDB's `missing_revisions_found`).
    public var missingRevisionsFound = 0
    /// The source sequence up to which every change has been processed (CouchDB's
    /// `through_seq`); the checkpoint follows it.
    public var throughSequence: ChangeSequence?
    /// Changes the source still had after the last batch read, as its feed
    /// reported (CouchDB's `changes_pending`); `nil` until known.
    public var changesPending: Int?
    /// The last error: a transient one while offline (cleared when a session starts again),
    /// the final one when stopped by a failure.
    public var lastError: EndpointError?
    /// The source sequence the target is known to be complete up to.
    public var checkpointedSequence: ChangeSequence?
    /// The source refused the checkpoint (401 or 403: a read-only source), so the
    /// checkpoint is kept on the target alone, as PouchDB does.
    public var checkpointOnTargetOnly = false

    /// A stopped replication with nothing done.
    public init() {}

    /// Adds the revisions `other` read, wrote and failed on: a pull's counts over its runs.
    public mutating func addCounts(of other: ReplicationStatus) {
        docsRead += other.docsRead
        docsWritten += other.docsWritten
        docWriteFailures += other.docWriteFailures
    }
}
