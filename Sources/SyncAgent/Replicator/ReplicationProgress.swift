import Locking

/// The live status of a replication, updated by the pipeline's stages and
/// broadcast to every ``Replicator/statusUpdates()`` subscriber.
final class ReplicationProgress: Sendable {
    private struct State: ~Copyable {
        var status = ReplicationStatus()
        var statistics = Checkpointer.Statistics()
        var changesRead = 0
        var pending = 0
        var inFlight = 0
        var continuous = false
        var completedSequence: ChangeSequence?
        /// The changes completed when each recent batch's last sequence was reached:
        /// a session resuming from one of them counts the changes after it once.
        var completedAt: [(sequence: ChangeSequence, completed: Int)] = []
    }

    private let state = Locked(State())
    /// Yielded to with `state`'s lock held, so each subscriber sees the statuses in order, none twice.
    private let subscribers = Broadcast<ReplicationStatus>(bufferingPolicy: .bufferingNewest(1))

    /// The status now.
    var status: ReplicationStatus { state.withLock { $0.status } }

    /// This session's counts, for the checkpoint history.
    var statistics: Checkpointer.Statistics { state.withLock { $0.statistics } }

    /// The sequence up to which every change is on the target.
    var completedSequence: ChangeSequence? { state.withLock { $0.completedSequence } }

    /// A stream of statuses: the current one, then each change (a slow reader sees the newest).
    func updates() -> AsyncStream<ReplicationStatus> {
        state.withLock { subscribers.subscribe(replaying: [$0.status]) }
    }

    /// A new session begins at `sequence`. The changes after it are read again,
    /// so `completed` goes back to what it was there (0 when unknown): each
    /// change is counted once, however many sessions it takes.
    func sessionStarted(at sequence: ChangeSequence, continuous: Bool) {
        update { state in
            state.statistics = Checkpointer.Statistics()
            state.inFlight = 0
            let resumed = state.completedAt.last { $0.sequence == sequence }?.completed ?? 0
            state.completedAt = [(sequence, resumed)]
            state.status.completed = resumed
            state.status.total = resumed
            state.changesRead = resumed
            state.continuous = continuous
            state.completedSequence = sequence
            state.status.activity = .active
            state.status.lastError = nil
        }
    }

    /// The reader has read a batch; it enters the pipeline.
    func read(_ batch: ChangeBatch) {
        update { state in
            state.changesRead += batch.count
            if let pending = batch.pending { state.pending = pending } else if batch.caughtUp { state.pending = 0 }
            if batch.pending != nil || batch.caughtUp { state.status.changesPending = state.pending }
            state.inFlight += 1
            state.status.total = max(state.status.completed, state.changesRead + state.pending)
            state.status.activity = .active
        }
    }

    /// What the inserter did with a batch's revisions, over all its parts.
    struct InsertedCounts {
        /// Revisions read from the source (a revision gone from the source since the diff is neither read nor a failure).
        var read = 0
        /// Revisions the source could not give.
        var unreadable = 0
        /// Revisions stored by the target.
        var written = 0
        /// Revisions the target refused.
        var refused = 0
    }

    /// The inserter has finished a batch (its last part). The batch's counts (revisions
    /// checked, missing, read, unreadable) are taken now, when it is done, so that a batch
    /// a failed session left half-way and the next one redoes is counted once.
    func inserted(_ batch: ReplicationBatch, _ counts: InsertedCounts) {
        let (read, unreadable, written, refused) = (counts.read, counts.unreadable, counts.written, counts.refused)
        update { state in
            state.statistics.missingChecked += batch.revisionCount
            state.statistics.missingFound += batch.missingFound
            state.statistics.docsRead += read
            state.statistics.docsWritten += written
            state.statistics.docWriteFailures += unreadable + refused
            state.status.docsRead += read
            state.status.docsWritten += written
            state.status.docWriteFailures += unreadable + refused
            state.status.revisionsChecked += batch.revisionCount
            state.status.missingRevisionsFound += batch.missingFound
            state.status.throughSequence = batch.changes.lastSequence
            state.status.completed += batch.changes.count
            state.status.total = max(state.status.total, state.status.completed)
            state.completedSequence = batch.changes.lastSequence
            state.completedAt.append((batch.changes.lastSequence, state.status.completed))
            if state.completedAt.count > ReplicatorTuning.rememberedBatches { state.completedAt.removeFirst(state.completedAt.count / 2) }
            state.inFlight -= 1
            if state.continuous && state.inFlight == 0 && batch.changes.caughtUp { state.status.activity = .idle }
        }
    }

    /// A checkpoint now records `sequence`; `targetOnly` when the source refused it.
    func checkpointed(_ sequence: ChangeSequence, targetOnly: Bool) {
        update { state in
            state.status.checkpointedSequence = sequence
            state.status.checkpointOnTargetOnly = targetOnly
        }
    }

    /// The replication is offline, stopped or active again; `error` replaces the last error when given.
    func set(_ activity: ReplicationActivity, error: EndpointError?) {
        update { state in
            state.status.activity = activity
            if let error { state.status.lastError = error }
        }
    }

    /// The replication ended as asked (a one-shot one reached the end of the feed, or it was
    /// stopped): earlier transient errors no longer matter.
    func finished() {
        update { state in
            state.status.activity = .stopped
            state.status.lastError = nil
        }
    }

    /// Ends every subscriber's stream; a later run serves new subscribers.
    func finish() {
        subscribers.finishSubscribers()
    }

    private func update(_ change: (inout State) -> Void) {
        state.withLock { state in
            let before = state.status
            change(&state)
            if state.status != before { subscribers.yield(state.status) }
        }
    }
}
