import FoundationEssentials
import Locking
import Store

/// The replications running in this process, as `GET /_active_tasks` and
/// `GET /_scheduler/jobs|docs` show them and the replication metrics count them.
///
/// Whoever starts a ``Replicator`` registers it with one call; the entry then
/// follows the replicator's status until its run ends, and leaves the registry.
///
/// ```swift
/// let replicator = Replicator(configuration)
/// tasks.register(replicator, database: "notes")
/// await replicator.run()
/// ```
public final class ActiveTasks: Sendable {
    /// One registered replication, as seen at one moment. Sources and targets are
    /// ``Endpoint/displayName``s, which never carry credentials.
    public struct Replication: Sendable {
        /// This process's id for the replication (CouchDB's job id form: hex, `+continuous` when continuous).
        public var id: String
        /// Where documents come from.
        public var source: String
        /// Where they go.
        public var target: String
        /// The local database the replication belongs to (syncd has no `_replicator` database).
        public var database: String?
        /// Whether it follows the source's changes after catching up.
        public var continuous: Bool
        /// When it was registered.
        public var started: Date
        /// When its status last changed.
        public var updated: Date
        /// Its newest status.
        public var status: ReplicationStatus
    }

    private let tasks = Locked<[String: Replication]>([:])
    private let metrics: ReplicationMetrics

    /// An empty registry, counting into the process's metrics.
    public init() {
        metrics = ReplicationMetrics()
    }

    /// The registered replications, oldest first.
    public var all: [Replication] {
        tasks.withLock { Array($0.values) }.sorted { ($0.started, $0.id) < ($1.started, $1.id) }
    }

    /// Registers `replicator` until its current or next run ends; returns its id.
    /// `database` names the local database it serves, when there is one.
    @discardableResult
    public func register(_ replicator: Replicator, database: String? = nil) -> String {
        let configuration = replicator.configuration
        let id = Database.newDocumentID() + (configuration.continuous ? "+continuous" : "")
        let now = Date()
        let local = database ?? [configuration.source, configuration.target]
            .compactMap { ($0 as? LocalEndpoint)?.database.name }.first
        let task = Replication(id: id, source: configuration.source.displayName, target: configuration.target.displayName,
                        database: local, continuous: configuration.continuous, started: now, updated: now,
                        status: replicator.status)
        tasks.withLock { $0[id] = task }
        metrics.counted(from: nil, to: task.status, states: states())
        let updates = replicator.statusUpdates()
        Task { [weak self] in
            for await status in updates {
                guard let self else { return }
                let before = self.tasks.withLock { tasks -> ReplicationStatus? in
                    let before = tasks[id]?.status
                    tasks[id]?.status = status
                    tasks[id]?.updated = Date()
                    return before
                }
                self.metrics.counted(from: before, to: status, states: self.states())
            }
            guard let self else { return }
            self.tasks.withLock { _ = $0.removeValue(forKey: id) }
            self.metrics.counted(from: nil, to: nil, states: self.states())
        }
        return id
    }

    /// How many registered replications are in each state.
    func states() -> [ReplicationActivity: Int] {
        tasks.withLock { tasks in
            tasks.values.reduce(into: [:]) { counts, task in counts[task.status.activity, default: 0] += 1 }
        }
    }
}
