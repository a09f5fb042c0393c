import Logging

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
    /// Read only the changes that entered the group at the source (``ChangeFeedRequest/firstHandOnly``):
    /// a group member's pull from a member whose full feed another member relays. Part of the
    /// replication ID, so the two kinds of pull from one member keep their own checkpoints.
    public var firstHandOnly = false
    /// Changes per batch: the unit read, diffed, fetched, written and checkpointed.
    public var batchSize = ReplicatorTuning.batchSize
    /// How many requests a batch's revisions are read with at once (large batches only).
    public var parallelFetches = ReplicatorTuning.parallelFetches
    /// Create the target database when it does not exist (remote targets).
    public var createTarget = false
    /// How often progress is checkpointed while running (a one-shot run also checkpoints at its end).
    public var checkpointInterval = ReplicatorTuning.checkpointInterval
    /// When to try again after a side could not be reached.
    public var retry = RetryPolicy()
    /// How often a remote continuous feed sends a heartbeat.
    public var heartbeat = ReplicatorTuning.heartbeat
    /// Shared by the replications into one target, so a revision that several find missing
    /// at once is fetched by one of them; `nil`: this replication claims nothing.
    public var claims: RevisionClaims?
    /// Called each time the replication falls idle (caught up, its last batch written): the
    /// agent gives memory back then (``MemoryTrim``).
    public var onIdle: (@Sendable () -> Void)?
    /// How loudly a refusal (401, 403) that stops the replication is logged: `info` where its
    /// owner reports it in its own words (the agent's peer links do). Other failures are errors.
    public var refusalLogLevel = Logger.Level.error
    /// The priority the replication's work runs at; `nil`: the starting task's. The agent's
    /// background replications run at `.utility`, so an application's requests to the node go
    /// first: a burst arriving from peers does not hold up a local write or read.
    public var priority: TaskPriority?

    /// A one-shot, unfiltered replication from `source` to `target`.
    public init(source: any Endpoint, target: any Endpoint) {
        self.source = source
        self.target = target
    }
}
