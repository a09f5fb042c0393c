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
        var nextSubscriber = 0
        var subscribers: [Int: AsyncStream<ReplicationStatus>.Continuation] = [:]
    }

    private let state = Locked(State())

    /// The status now.
    var status: ReplicationStatus { state.withLock { $0.status } }

    /// This session's counts, for the checkpoint history.
    var statistics: Checkpointer.Statistics { state.withLock { $0.statistics } }

    /// The sequence up to which every change is on the target.
    var completedSequence: ChangeSequence? { state.withLock { $0.completedSequence } }

    /// A stream of statuses: the current one, then each change (a slow reader sees the newest).
    func updates() -> AsyncStream<ReplicationStatus> {
        let (stream, continuation) = AsyncStream.makeStream(of: ReplicationStatus.self, bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { state in
            let id = state.nextSubscriber
            state.nextSubscriber += 1
            state.subscribers[id] = continuation
            continuation.yield(state.status)
            return id
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// A new session begins at `sequence`.
    func sessionStarted(at sequence: ChangeSequence, continuous: Bool) {
        update { state in
            state.statistics = Checkpointer.Statistics()
            state.inFlight = 0
            state.changesRead = state.status.completed
            state.continuous = continuous
            state.completedSequence = sequence
            state.status.activity = .active
            state.status.lastError = nil
        }
    }

    /// The reader has read a batch; it enters the pipeline.
    func read(_ batch: ChangeBatch) {
        update { state in
            state.changesRead += batch.changes.count
            if let pending = batch.pending { state.pending = pending } else if batch.caughtUp { state.pending = 0 }
            state.inFlight += 1
            state.status.total = max(state.status.completed, state.changesRead + state.pending)
            state.status.activity = .active
        }
    }

    /// The finder has asked about `checked` revisions and found `found` missing.
    func diffed(checked: Int, found: Int) {
        update { state in
            state.statistics.missingChecked += checked
            state.statistics.missingFound += found
        }
    }

    /// The fetcher has read `read` revisions; `failed` could not be read.
    func fetched(read: Int, failed: Int) {
        update { state in
            state.statistics.docsRead += read
            state.statistics.docWriteFailures += failed
            state.status.docsRead += read
            state.status.docWriteFailures += failed
        }
    }

    /// The inserter has finished a batch: `written` revisions stored, `failed` refused.
    func inserted(_ batch: ChangeBatch, written: Int, failed: Int) {
        update { state in
            state.statistics.docsWritten += written
            state.statistics.docWriteFailures += failed
            state.status.docsWritten += written
            state.status.docWriteFailures += failed
            state.status.completed += batch.changes.count
            state.status.total = max(state.status.total, state.status.completed)
            state.completedSequence = batch.lastSequence
            state.inFlight -= 1
            if state.continuous && state.inFlight == 0 && batch.caughtUp { state.status.activity = .idle }
        }
    }

    /// A checkpoint now records `sequence`.
    func checkpointed(_ sequence: ChangeSequence) {
        update { $0.status.checkpointedSequence = sequence }
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

    /// Ends every subscriber's stream.
    func finish() {
        let continuations = state.withLock { state in
            defer { state.subscribers.removeAll() }
            return Array(state.subscribers.values)
        }
        for continuation in continuations { continuation.finish() }
    }

    private func update(_ change: (inout State) -> Void) {
        let (status, continuations) = state.withLock { state in
            let before = state.status
            change(&state)
            return (state.status, state.status == before ? [] : Array(state.subscribers.values))
        }
        for continuation in continuations { continuation.yield(status) }
    }
}
