/// What to replicate, and how.
public struct ReplicationConfiguration: Sendable {
    /// Where documents come from.
    public var source: any Endpoint
    /// Where they go.
    public var target: any Endpoint
    /// Keep following the source's changes after catching up.
    public var continuous = false
    /// Only some documents.
    public var filter: ReplicationFilter?
    /// Changes per batch: the unit read, diffed, fetched, written and checkpointed.
    public var batchSize = 500
    /// How many requests a batch's revisions are read with at once (large batches only). More
    /// than one helps only when the source has cores to spare (two syncd on two cores: it does not).
    public var parallelFetches = 1
    /// Create the target database when it does not exist (remote targets).
    public var createTarget = false
    /// How often progress is checkpointed while running (a one-shot run also checkpoints at its end).
    public var checkpointInterval: Duration = .seconds(5)
    /// When to try again after a side could not be reached.
    public var retry = RetryPolicy()
    /// How often a remote continuous feed sends a heartbeat.
    public var heartbeat: Duration = .seconds(10)

    /// A one-shot, unfiltered replication from `source` to `target`.
    public init(source: any Endpoint, target: any Endpoint) {
        self.source = source
        self.target = target
    }
}
