import Locking
import Logging
import Store

/// Supervises the pulls from one paired peer: a continuous replication of each
/// database shared with it, reading the peer's whole feed or only its first-hand
/// changes, as the agent's ``FeedRing`` says (a database read first-hand has the whole
/// feed swept every ten minutes besides, so nothing waits on the ring being right), all
/// over the peer's one ``PeerConnection``, each
/// resuming from its checkpoints when started again over another, and the peer's
/// introductions (``IntroductionFeed``) over the same connection. It reports what
/// the pulls run into (no answer, the peer refusing this node, catching up); the
/// ``PeerLink`` decides from that whether the connection is still good.
final class PeerPulls: Sendable {
    /// What a pull ran into.
    enum Event: Sendable {
        /// A pull went offline, saying why; `answered`: the peer answered, with an HTTP error
        /// (else no answer came: refused, reset, silent, so the address in use is taken for dead).
        case offline(String, answered: Bool)
        /// A pull stopped because the peer refuses this node (401, 403), saying so; `unknown`:
        /// as a node it does not know (an introduced member may not have heard of this one yet).
        case refused(String, unknown: Bool)
        /// A pull caught up: the connection works end to end.
        case caughtUp
    }

    private let peer: PairedPeer
    private let context: PeerLink.Context
    private let report: @Sendable (Event) -> Void
    private let state: Locked<State>

    private struct State {
        /// The databases pulled, with the pull filter of each.
        var databases: [String: ReplicationFilter?]
        /// The databases whose first-hand changes only are pulled (``FeedRing``).
        var firstHand: Set<String>
        /// What the pulls run over, while the peer is reached.
        var connection: PeerConnection?
        var pulls: [String: Pull] = [:]
        /// Follows the peer's introductions while connected.
        var introductions: Task<Void, Never>?
        /// Sweeps the whole feeds of the databases pulled first-hand, while connected.
        var sweeper: Task<Void, Never>?
        /// What the pulls stopped so far carried, by database: added to the running ones' counts.
        var carried: [String: ReplicationStatus] = [:]
    }

    /// One database pulled from the peer.
    private struct Pull {
        let filter: ReplicationFilter?
        let firstHandOnly: Bool
        let replicator: Replicator
        let watch: Task<Void, Never>
    }

    /// Pulls of `databases` from `peer`, none running until ``start(over:)``, those of `firstHand`
    /// reading first-hand changes only; `report` hears what they run into.
    init(peer: PairedPeer, databases: [String: ReplicationFilter?], firstHand: Set<String> = [], context: PeerLink.Context,
         report: @escaping @Sendable (Event) -> Void) {
        self.peer = peer
        self.context = context
        self.report = report
        state = Locked(State(databases: databases, firstHand: firstHand))
    }

    /// The databases pulled, with the pull filter of each.
    var databases: [String: ReplicationFilter?] { state.withLock { $0.databases } }

    /// The databases whose first-hand changes only are pulled.
    var firstHand: Set<String> { state.withLock { $0.firstHand } }

    /// The connection the pulls run over, if any.
    var connection: PeerConnection? { state.withLock { $0.connection } }

    /// Pulls `databases` from now on: pulls of databases whose filter did not change
    /// keep running; others stop (they checkpoint) or start. The databases are recorded
    /// before this returns, so updates whose tasks run out of order still end on the last
    /// one's; the task stops the stale pulls and starts what is missing then.
    func update(databases: [String: ReplicationFilter?]) -> Task<Void, Never> {
        restart { $0.databases = databases }
    }

    /// Pulls the first-hand changes only of the databases in `firstHand` from now on, and
    /// the whole feed of the others: pulls whose kind changed stop and start again, as in
    /// ``update(databases:)``.
    func update(firstHand: Set<String>) -> Task<Void, Never> {
        restart { $0.firstHand = firstHand }
    }

    /// Applies `change` and restarts the pulls no longer as asked.
    private func restart(after change: (inout State) -> Void) -> Task<Void, Never> {
        let stale = state.withLock { state in
            change(&state)
            let (databases, firstHand) = (state.databases, state.firstHand)
            let stale = state.pulls.filter { name, pull in
                databases[name].map { $0 != pull.filter || firstHand.contains(name) != pull.firstHandOnly } ?? true
            }
            for name in stale.keys { state.pulls.removeValue(forKey: name) }
            return stale
        }
        return Task {
            await self.stop(stale)
            self.startMissing()
        }
    }

    /// Pulls every database over `connection`, which this now owns until ``stop(quickly:)``.
    func start(over connection: PeerConnection) {
        var feed: Task<Void, Never>?
        if let store = context.peers, peer.introduce {
            let introductions = IntroductionFeed(member: peer, connection: connection, peers: store, logger: context.logger)
            feed = Task { await introductions.run() }
        }
        let interval = context.sweepInterval
        let sweeper = Task(priority: .utility) { [weak self] in
            while (try? await Task.sleep(for: interval)) != nil {
                guard let self else { return }
                await self.sweep(over: connection)
            }
        }
        let replaced = state.withLock { state in
            defer {
                state.connection = connection
                state.introductions = feed
                state.sweeper = sweeper
            }
            return (state.introductions, state.sweeper)
        }
        replaced.0?.cancel()
        replaced.1?.cancel()
        startMissing()
    }

    /// Stops every pull and shuts the connection down. `quickly`: the address is dead or
    /// being left, so the connection is closed first and the pulls' last checkpoint on the
    /// peer does not wait for a timeout (the checkpoints they made while running stand).
    func stop(quickly: Bool) async {
        let (pulls, connection, introductions, sweeper) = state.withLock { state in
            defer {
                state.pulls = [:]
                state.connection = nil
                state.introductions = nil
                state.sweeper = nil
            }
            return (state.pulls, state.connection, state.introductions, state.sweeper)
        }
        introductions?.cancel()
        sweeper?.cancel()
        // Closing a client waits for its connections to close, which a dead address makes slow:
        // its requests fail at once, the closing itself goes on in the background.
        if quickly, let connection { Task { await connection.shutdown() } }
        await stop(pulls)
        await sweeper?.value
        await connection?.shutdown()
    }

    /// Each database's pull: its state now, and its counts since the agent started
    /// (over every connection, so a document sent twice would show).
    var replications: [String: ReplicationStatus] {
        let (pulls, carried, databases) = state.withLock { ($0.pulls, $0.carried, $0.databases) }
        var result = carried.mapValues { total in
            var stopped = total
            stopped.activity = .offline
            return stopped
        }
        for (database, pull) in pulls {
            var status = pull.replicator.status
            if let total = carried[database] { status.addCounts(of: total) }
            result[database] = status
        }
        return result.filter { databases[$0.key] != nil }
    }

    /// Starts pulling each database not pulled yet, if connected.
    private func startMissing() {
        let (databases, firstHand, connection) = state.withLock { state in
            (state.databases.filter { state.pulls[$0.key] == nil }, state.firstHand, state.connection)
        }
        guard let connection else { return }
        for (database, filter) in databases.sorted(by: { $0.key < $1.key }) {
            do {
                var configuration = try self.configuration(database, filter: filter, over: connection)
                configuration.continuous = true
                configuration.firstHandOnly = firstHand.contains(database)
                configuration.retry = ReplicatorTuning.peerRetry
                configuration.onIdle = MemoryTrim.shared.request
                let replicator = Replicator(configuration, logger: context.logger)
                let watch = Task { [report] in
                    var last = ReplicationActivity.stopped
                    for await status in replicator.statusUpdates() where status.activity != last {
                        last = status.activity
                        switch status.activity {
                        case .offline:
                            let error = status.lastError
                            report(.offline(error?.reason ?? "the connection broke", answered: (error?.status ?? 0) != 0))
                        case .stopped:
                            if let error = status.lastError, error.isForbidden {
                                report(error.isNotPaired ? .refused("the peer refuses this node (\(error.status), not paired with it)", unknown: true)
                                       : .refused("the peer refuses this node for \(database) (\(error.status): \(error.reason))", unknown: false))
                            }
                        case .idle: report(.caughtUp)
                        case .active: break
                        }
                    }
                }
                let added = state.withLock { state in
                    guard state.pulls[database] == nil, state.databases[database].map({ $0 == filter }) ?? false,
                          state.firstHand.contains(database) == configuration.firstHandOnly, state.connection === connection else { return false }
                    state.pulls[database] = Pull(filter: filter, firstHandOnly: configuration.firstHandOnly, replicator: replicator, watch: watch)
                    return true
                }
                if added {
                    context.activeTasks.register(replicator, database: database)
                    replicator.start()
                } else {
                    watch.cancel()
                }
            } catch {
                context.logger.error("cannot replicate \(database) with \(peer.name): \(error)")
            }
        }
    }

    /// A pull of `database` from the peer over `connection`, into this node's copy.
    private func configuration(_ database: String, filter: ReplicationFilter?, over connection: PeerConnection) throws -> ReplicationConfiguration {
        // What a member's pull writes is relayed: first-hand feeds leave it out.
        var configuration = ReplicationConfiguration(
            source: try connection.endpoint(database, maximumDocumentSize: context.catalog.maximumDocumentSize, logger: context.logger),
            target: LocalEndpoint(try context.catalog.openOrCreate(database), writesRelayed: true, author: Principal.peer(peer).author))
        configuration.filter = filter
        configuration.claims = context.claims.claims(on: database)
        configuration.refusalLogLevel = .info  // the link says the peer refuses this node
        configuration.priority = .utility
        return configuration
    }

    /// Reads the whole feed of each database pulled first-hand once, from where the whole
    /// feed was last read (its checkpoints are the whole pull's), and adds what it carried
    /// to the database's counts. A sweep that fails is tried again at the next.
    private func sweep(over connection: PeerConnection) async {
        let (databases, firstHand) = state.withLock { ($0.databases, $0.firstHand) }
        for (database, filter) in databases.sorted(by: { $0.key < $1.key }) where firstHand.contains(database) {
            guard !Task.isCancelled, state.withLock({ $0.connection === connection }) else { return }
            do {
                var configuration = try self.configuration(database, filter: filter, over: connection)
                configuration.retry.oneShotAttempts = 1
                // Sweeps are routine: their start and end are not news (their failures are).
                var logger = context.logger
                if logger.logLevel > .debug { logger.logLevel = max(logger.logLevel, .warning) }
                let status = await Replicator(configuration, logger: logger).run()
                guard status.docsRead > 0 else { continue }
                state.withLock { state in
                    state.carried[database, default: ReplicationStatus()].addCounts(of: status)
                }
            } catch {
                context.logger.error("cannot sweep \(database) from \(peer.name): \(error)")
            }
        }
    }

    private func stop(_ pulls: [String: Pull]) async {
        await withTaskGroup(of: Void.self) { group in
            for pull in pulls.values { group.addTask { await pull.replicator.stop() } }
        }
        state.withLock { state in
            for (database, pull) in pulls {
                let status = pull.replicator.status
                var total = state.carried[database] ?? ReplicationStatus()
                total.addCounts(of: status)
                total.checkpointedSequence = status.checkpointedSequence ?? total.checkpointedSequence
                state.carried[database] = total
            }
        }
        for pull in pulls.values { pull.watch.cancel() }
    }
}
