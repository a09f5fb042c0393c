import AsyncAlgorithms
import Logging

/// One run of a replication, from verifying the peers to the end of the feed
/// (or until cancelled or failed): the protocol's steps, with the four stages
/// running at once and a batch in each channel between them.
struct ReplicationSession: Sendable {
    let configuration: ReplicationConfiguration
    let progress: ReplicationProgress
    let logger: Logger

    func run() async throws {
        let source = configuration.source
        let target = configuration.target
        try await source.prepare(createIfMissing: false)
        try await target.prepare(createIfMissing: configuration.createTarget)
        var filterCode: String?
        if case .function(let name, _)? = configuration.filter {
            filterCode = try await source.filterFunction(name)
        }
        let replicationID = ReplicationID(
            sourceIdentity: try await source.identity(), targetIdentity: try await target.identity(),
            sourceIsLocal: source.isLocal, targetIsLocal: target.isLocal, filter: configuration.filter,
            firstHandOnly: configuration.firstHandOnly, filterCode: filterCode
        )
        let checkpointer = Checkpointer(replicationID: replicationID, source: source, target: target)
        let since = try await checkpointer.start()
        let readOnlySource = await checkpointer.sourceIsReadOnly
        logger.info("replication starts", metadata: [
            "id": "\(replicationID)", "source": "\(source.displayName)", "target": "\(target.displayName)", "since": "\(since)",
            "checkpoint": readOnlySource ? "on the target only (the source refuses it)" : "on both sides",
        ])
        progress.sessionStarted(at: since, continuous: configuration.continuous)
        progress.checkpointed(since, targetOnly: readOnlySource)

        let claims = configuration.claims.map { ($0, $0.owner()) }
        defer { if let (held, owner) = claims { held.releaseAll(of: owner) } }
        let changes = ChangeQueue(capacity: ReplicatorTuning.changeQueueBatches * configuration.batchSize)
        let diffed = AsyncChannel<ReplicationBatch>()
        let fetched = AsyncChannel<ReplicationBatch>()
        var feed = ChangeFeedRequest(
            since: since, continuous: configuration.continuous, batchSize: configuration.batchSize,
            filter: configuration.filter,
            heartbeatMilliseconds: Int(configuration.heartbeat.wholeMilliseconds),
            targetWinners: target.recentWinnerTexts
        )
        feed.firstHandOnly = configuration.firstHandOnly
        let request = feed
        do {
            let staging = try await target.attachmentStaging()
            try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    try await ChangesReader(source: source, request: request, progress: progress, logger: logger).run(into: changes)
                    return true
                }
                group.addTask {
                    try await RevisionFinder(target: target, batchSize: configuration.batchSize, progress: progress, claims: claims)
                        .run(from: changes, into: diffed)
                    return true
                }
                group.addTask {
                    try await RevisionFetcher(
                        source: source, staging: staging, parallelism: configuration.parallelFetches,
                        targetWinners: target.recentWinners, logger: logger
                    ).run(from: diffed, into: fetched)
                    return true
                }
                group.addTask {
                    try await Inserter(target: target, progress: progress, logger: logger).run(from: fetched)
                    return true
                }
                group.addTask {
                    try await checkpointOnCadence(checkpointer)
                    return false
                }
                var finishedStages = 0
                while finishedStages < 4, let finished = try await group.next() {
                    if finished { finishedStages += 1 }
                }
                group.cancelAll()
            }
        } catch {
            // Keep what was done if both sides still answer within a few seconds
            // (in a task of its own: a stopped replication's task is cancelled).
            let session = self
            await Task {
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { try? await session.saveCheckpoint(checkpointer) }
                    group.addTask { try? await Task.sleep(for: ReplicatorTuning.lastCheckpointDeadline) }
                    await group.next()
                    group.cancelAll()
                }
            }.value
            throw error
        }
        try await saveCheckpoint(checkpointer)
    }

    /// Checkpoints every `checkpointInterval` while changes flow, and once the replication
    /// falls idle (at most once a second), so a caught-up replication's checkpoint is current.
    /// A timer and the idle transitions feed one stream (`true`: fell idle), read here alone.
    /// The timer runs only while the replication is not idle: an idle one has nothing new to
    /// save, and a continuous pull spends most of its life idle.
    private func checkpointOnCadence(_ checkpointer: Checkpointer) async throws {
        // Any event waiting means "save": one is enough, whatever came before it.
        let (events, sink) = AsyncStream.makeStream(of: Bool.self, bufferingPolicy: .bufferingNewest(1))
        let interval = max(configuration.checkpointInterval, ReplicatorTuning.shortestCheckpointInterval)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                while await untilNotIdle() {
                    try await Task.sleep(for: interval)
                    sink.yield(false)
                }
            }
            group.addTask {
                var wasIdle = false
                for await status in progress.updates() {
                    let idle = status.activity == .idle
                    if idle && !wasIdle {
                        sink.yield(true)
                        configuration.onIdle?()
                    }
                    wasIdle = idle
                }
            }
            defer { group.cancelAll() }
            var lastSaved = ContinuousClock.now
            for await fellIdle in events {
                if fellIdle { try await Task.sleep(until: lastSaved + ReplicatorTuning.idleCheckpointSpacing, clock: .continuous) }
                try await saveCheckpoint(checkpointer)
                lastSaved = .now
            }
            try Task.checkCancellation()
        }
    }

    /// Waits while the replication is idle; false when its updates end (it is over).
    private func untilNotIdle() async -> Bool {
        for await status in progress.updates() where status.activity != .idle { return true }
        return false
    }

    private func saveCheckpoint(_ checkpointer: Checkpointer) async throws {
        guard let sequence = progress.completedSequence else { return }
        let wasReadOnly = await checkpointer.sourceIsReadOnly
        try await checkpointer.save(sequence, statistics: progress.statistics)
        let readOnly = await checkpointer.sourceIsReadOnly
        if readOnly && !wasReadOnly {
            logger.warning("the source refuses checkpoints; keeping the checkpoint on the target only", metadata: ["source": "\(configuration.source.displayName)"])
        }
        progress.checkpointed(sequence, targetOnly: readOnly)
    }
}
