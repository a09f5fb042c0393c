import Locking
import Logging

/// Replicates documents from one endpoint to another (local store or remote
/// CouchDB-protocol URL), one-shot or continuous, by the CouchDB replication
/// protocol.
///
/// ```swift
/// let replicator = Replicator(ReplicationConfiguration(source: LocalEndpoint(db), target: remote))
/// let status = await replicator.run()          // one-shot: returns when done
/// print(status.docsWritten, status.lastError as Any)
/// ```
///
/// A continuous replication runs until ``stop()``: it goes ``ReplicationActivity/idle``
/// when caught up, ``ReplicationActivity/offline`` while a side cannot be
/// reached (retrying with exponential backoff), and resumes from its
/// checkpoint when the side comes back.
public final class Replicator: Sendable {
    /// What this replicator replicates.
    public let configuration: ReplicationConfiguration
    private let logger: Logger
    private let progress = ReplicationProgress()
    private let task = Locked<Task<ReplicationStatus, Never>?>(nil)

    /// A replicator; nothing happens until ``start()`` or ``run()``.
    public init(_ configuration: ReplicationConfiguration, logger: Logger = Logger(label: "syncd.replicator")) {
        self.configuration = configuration
        self.logger = logger
    }

    /// The status now.
    public var status: ReplicationStatus { progress.status }

    /// The current status, then every change of it, until the replicator stops for good.
    public func statusUpdates() -> AsyncStream<ReplicationStatus> { progress.updates() }

    /// Starts replicating in the background (does nothing if already running).
    public func start() {
        _ = running()
    }

    /// Stops the replication and waits until it has stopped (it checkpoints first).
    public func stop() async {
        let running = task.withLock { $0 }
        running?.cancel()
        _ = await running?.value
    }

    /// Replicates until done (one-shot), failed for good, stopped, or the calling task is
    /// cancelled; returns the final status. Starts the replication if ``start()`` has not.
    @discardableResult
    public func run() async -> ReplicationStatus {
        let running = running()
        return await withTaskCancellationHandler {
            await running.value
        } onCancel: {
            running.cancel()
        }
    }

    /// The replication's task, started on first use.
    private func running() -> Task<ReplicationStatus, Never> {
        task.withLock { task in
            if let task { return task }
            let started = Task(priority: configuration.priority) { await self.replicate() }
            task = started
            return started
        }
    }

    private func replicate() async -> ReplicationStatus {
        defer {
            progress.finish()
            task.withLock { $0 = nil }  // a later start() or run() replicates again
        }
        var failures = 0
        var attempts = 0
        while !Task.isCancelled {
            attempts += 1
            progress.set(.active, error: nil)
            let completedBefore = progress.status.completed
            do {
                try await ReplicationSession(configuration: configuration, progress: progress, logger: logger).run()
                if !configuration.continuous {
                    progress.finished()
                    logger.info("replication finished", metadata: metadata)
                    return progress.status
                }
            } catch is CancellationError {
                break
            } catch {
                if Task.isCancelled { break }
                let failure = (error as? EndpointError)
                    ?? EndpointError(status: 500, error: "internal_error", reason: String(describing: error), endpoint: "replication")
                failures = progress.status.completed > completedBefore ? 1 : failures + 1
                // A one-shot replication whose first attempt cannot connect at all fails at once: a person must act.
                let retries = configuration.continuous || (failures < configuration.retry.oneShotAttempts
                    && !(attempts == 1 && failure.isConnectFailure))
                guard failure.isTransient, retries else {
                    logger.log(level: failure.isForbidden ? configuration.refusalLogLevel : .error, "replication failed", metadata: ["error": "\(failure)"])
                    progress.set(.stopped, error: failure)
                    return progress.status
                }
                let delay = configuration.retry.jitteredDelay(afterFailures: failures)
                logger.warning("replication offline; retrying", metadata: ["error": "\(failure)", "in": "\(delay)"])
                progress.set(.offline, error: failure)
                do { try await Task.sleep(for: delay) } catch { break }
            }
        }
        progress.finished()  // stopped as asked: the errors of an offline spell are over
        return progress.status
    }

    private var metadata: Logger.Metadata {
        let status = progress.status
        return ["read": "\(status.docsRead)", "written": "\(status.docsWritten)", "failures": "\(status.docWriteFailures)"]
    }
}
