import Foundation
import Locking
import Logging
import NIOSSL
import Store

/// The one service that owns the connection to one paired peer: it finds an
/// address where the peer answers with its own certificate, pulls every shared
/// database from it continuously, and moves to the peer's new address when the
/// address book says it moved, resuming from the checkpoints.
///
/// Each agent only pulls from its peers; the peer pulls from it in turn, so each
/// revision crosses each link once per direction. What a node offers (its push
/// filter) is applied by its listener to the feeds its peers read.
final class PeerLink: Sendable {
    /// What every link needs from the agent.
    struct Context: Sendable {
        let catalog: Catalog
        let identity: NodeIdentity
        let addresses: AddressBook
        /// Where the pulls are registered for `_active_tasks`, `_scheduler` and the metrics.
        let activeTasks: ActiveTasks
        let logger: Logger
    }

    /// What the link is doing.
    enum ConnectionState: String, Sendable {
        case connecting, online, offline
    }

    /// The peer, as paired.
    let peer: PairedPeer
    private let context: Context
    private let state: Locked<State>

    private struct State {
        var state = ConnectionState.connecting
        var address: String?
        var reason: String?
        /// Where the peer answers and with which certificate, while online.
        var reached: (address: String, certificate: NIOSSLCertificate)?
        /// The databases pulled, with the pull filter of each.
        var databases: [String: ReplicationFilter?]
        var pulls: [String: Pull] = [:]
        /// What the pulls stopped so far carried, by database: added to the running ones' counts.
        var carried: [String: ReplicationStatus] = [:]
        var wake: AsyncStream<Wake>.Continuation?
    }

    /// Why the link looks again at where the peer is.
    private enum Wake: Sendable {
        /// The address book changed: the peer may have moved.
        case addresses
        /// A pull went offline, saying why; `answered`: the peer answered, with an HTTP error
        /// (else no answer came: refused, reset, silent, so the address in use is taken for dead).
        case offline(String, answered: Bool)
        /// A pull stopped because the peer refuses this node (401, 403), saying so.
        case refused(String)
        /// A pull caught up: the link works end to end.
        case caughtUp
        /// The pause numbered so, after failing to reach the peer, ended.
        case retry(Int)
    }

    /// One database pulled from the peer.
    private struct Pull {
        let filter: ReplicationFilter?
        let replicator: Replicator
        let endpoint: RemoteEndpoint
        let watch: Task<Void, Never>
    }

    init(peer: PairedPeer, databases: [String: ReplicationFilter?], context: Context) {
        self.peer = peer
        self.context = context
        state = Locked(State(databases: databases))
    }

    /// The databases pulled, with the pull filter of each.
    var databases: [String: ReplicationFilter?] { state.withLock { $0.databases } }

    /// Pulls `databases` from now on: replications of databases whose filter did not
    /// change keep running; others stop (they checkpoint) or start.
    func update(databases: [String: ReplicationFilter?]) async {
        let (stale, reached) = state.withLock { state in
            state.databases = databases
            let stale = state.pulls.filter { name, pull in databases[name].map { $0 != pull.filter } ?? true }
            for name in stale.keys { state.pulls.removeValue(forKey: name) }
            return (stale, state.reached)
        }
        await stop(stale)
        if let reached { startMissing(at: reached.address, certificate: reached.certificate) }
    }

    /// The peer's state, address in use and, when offline, why.
    var connection: (state: ConnectionState, address: String?, reason: String?) {
        state.withLock { ($0.state, $0.address, $0.reason) }
    }

    /// Each database's pull: its state now, and its counts since the agent started
    /// (over every connection the link made, so a document sent twice would show).
    var replications: [String: ReplicationStatus] {
        let (pulls, carried) = state.withLock { ($0.pulls, $0.carried) }
        var result = carried.mapValues { total in
            var stopped = total
            stopped.activity = .offline
            return stopped
        }
        for (database, pull) in pulls {
            var status = pull.replicator.status
            if let total = carried[database] {
                status.docsRead += total.docsRead
                status.docsWritten += total.docsWritten
                status.docWriteFailures += total.docWriteFailures
            }
            result[database] = status
        }
        return result.filter { databases[$0.key] != nil }
    }

    /// Stops every pull and connects again (this node's own addresses changed, so
    /// its open connections may be dead without knowing it).
    func reconnect() async {
        await stopAll(quickly: true)
        state.withLock { $0.wake }?.yield(.addresses)
    }

    /// Keeps the databases in sync until cancelled; stops the replications (they checkpoint) before returning.
    ///
    /// Every failure (no answer, refused, reset, a TLS or HTTP error, the peer refusing this
    /// node) makes the link wait longer before it tries again, with jitter, up to a minute;
    /// a pull catching up resets the wait, and a change of the peer's addresses ends it at once.
    func run() async {
        let wakes = AsyncStream.makeStream(of: Wake.self, bufferingPolicy: .bufferingNewest(8))
        state.withLock { $0.wake = wakes.continuation }
        let uuid = peer.uuid.lowercased()
        let watch = Task {
            for await changed in context.addresses.changes() where changed == uuid { wakes.continuation.yield(.addresses) }
        }
        defer { watch.cancel() }
        var failures = 0
        // Refusals are not forgiven by another pull catching up, so a peer refusing one database
        // does not make the link reconnect every second; pairing anew starts a new link.
        var refusals = 0
        var pauses = 0
        var iterator = wakes.stream.makeAsyncIterator()
        var reason = Wake.addresses
        /// Waits after a failure until the pause ends or the peer's addresses change.
        func pause() async -> Wake {
            failures += 1
            pauses += 1
            let number = pauses
            let delay = ReplicatorTuning.peerRetry.jitteredDelay(afterFailures: max(failures, refusals))
            let timer = Task {
                guard (try? await Task.sleep(for: delay)) != nil else { return }
                wakes.continuation.yield(.retry(number))
            }
            defer { timer.cancel() }
            while let wake = await iterator.next() {
                switch wake {
                case .addresses: return wake
                case .retry(number): return wake
                default: continue  // from pulls already stopped, or an earlier pause
                }
            }
            return .retry(number)
        }
        while !Task.isCancelled {
            let candidates = context.addresses.candidates(for: uuid).map { $0.address }
            if let current = state.withLock({ $0.reached?.address }) {
                switch reason {
                case .addresses:
                    // Every candidate is tried at once; the first to show the peer's certificate wins, so a
                    // dead address loses to a live one without waiting for its timeout.
                    if case .reached(let address, let certificate) = await probe(candidates), address != current {
                        await stopAll(quickly: true)
                        connected(at: address, certificate: certificate)
                    } else if !candidates.contains(current) {
                        await stopAll(quickly: true)
                        continue
                    }
                case .offline(let why, let answered):
                    // A pull failed. Without an answer (refused, reset, a silent feed) the address is taken
                    // for dead; after an HTTP error it is kept if it still answers (the pulls retry).
                    var dead = !answered
                    if answered, case .failed = await probe([current]) { dead = true }
                    if dead {
                        await stopAll(quickly: true)
                        failed(Self.place(why, at: current))
                        reason = await pause()
                        continue
                    }
                case .refused(let why):
                    refusals += 1
                    await stopAll(quickly: true)
                    failed(Self.place(why, at: current))
                    reason = await pause()
                    continue
                case .caughtUp:
                    failures = 0
                case .retry:
                    break
                }
                reason = await iterator.next() ?? .retry(0)
                continue
            }
            guard !candidates.isEmpty else {
                failed("no address known (not seen on the LAN, none configured)")
                reason = await iterator.next() ?? .retry(0)
                continue
            }
            if connection.state != .offline { set(.connecting, reason: nil) }
            switch await probe(candidates) {
            case .reached(let address, let certificate):
                connected(at: address, certificate: certificate)
                reason = await iterator.next() ?? .retry(0)
            case .failed(let why):
                failed(why)
                reason = await pause()
            }
        }
        await stopAll(quickly: false)
        set(.offline, reason: "stopped")
    }

    /// `why`, naming the address unless it does already.
    private static func place(_ why: String, at address: String) -> String {
        why.contains(address) ? why : "\(why) at \(address)"
    }

    /// Marks the peer offline for `reason`, logging it when the reason is new.
    private func failed(_ reason: String) {
        let changed = state.withLock { state in
            defer { state.reason = reason }
            return state.state != .offline || state.reason != reason
        }
        set(.offline, reason: reason)
        if changed { context.logger.warning("peer \(peer.name) is offline: \(reason)") }
    }

    /// Records that the peer answers at `address` and starts the pulls there.
    private func connected(at address: String, certificate: NIOSSLCertificate) {
        state.withLock {
            $0.reached = (address, certificate)
            $0.state = .online
            $0.address = address
            $0.reason = nil
        }
        startMissing(at: address, certificate: certificate)
        context.logger.info("replicating with \(peer.name) at \(address)")
    }

    /// Starts pulling each database not pulled yet from `address`; a pull going offline wakes the link.
    private func startMissing(at address: String, certificate: NIOSSLCertificate) {
        let (databases, wake) = state.withLock { state in (state.databases.filter { state.pulls[$0.key] == nil }, state.wake) }
        for (database, filter) in databases.sorted(by: { $0.key < $1.key }) {
            do {
                let url = try RemoteURL("https://\(address)/\(PathEncoding.segment(database))")
                let remote = RemoteEndpoint(RemoteEndpoint.Configuration(
                    url: url, trust: .certificate(certificate), peerUUID: peer.uuid,
                    requestTimeout: ReplicatorTuning.peerRequestTimeout, connectTimeout: ReplicatorTuning.peerConnectTimeout,
                    clientIdentity: context.identity),
                    logger: context.logger)
                var configuration = ReplicationConfiguration(source: remote, target: LocalEndpoint(try context.catalog.openOrCreate(database)))
                configuration.continuous = true
                configuration.filter = filter
                configuration.retry = ReplicatorTuning.peerRetry
                let replicator = Replicator(configuration, logger: context.logger)
                let watch = Task {
                    var last = ReplicationActivity.stopped
                    for await status in replicator.statusUpdates() where status.activity != last {
                        last = status.activity
                        switch status.activity {
                        case .offline:
                            let error = status.lastError
                            wake?.yield(.offline(error?.reason ?? "the connection broke", answered: (error?.status ?? 0) != 0))
                        case .stopped:
                            if let error = status.lastError, error.isForbidden {
                                wake?.yield(.refused("the peer refuses this node (\(error.status) \(error.error))"))
                            }
                        case .idle: wake?.yield(.caughtUp)
                        case .active: break
                        }
                    }
                }
                let added = state.withLock { state in
                    guard state.pulls[database] == nil, state.databases[database] != nil else { return false }
                    state.pulls[database] = Pull(filter: filter, replicator: replicator, endpoint: remote, watch: watch)
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

    /// Stops every pull. `quickly`: the address is dead or being left, so the connections
    /// are closed first and the pulls' last checkpoint on the peer does not wait for a timeout
    /// (the checkpoints they made while running stand).
    private func stopAll(quickly: Bool) async {
        let pulls = state.withLock { state in
            defer {
                state.pulls = [:]
                state.reached = nil
            }
            return state.pulls
        }
        // Closing a client waits for its connections to close, which a dead address makes slow:
        // its requests fail at once, the closing itself goes on in the background.
        if quickly { for pull in pulls.values { Task { await pull.endpoint.shutdown() } } }
        await stop(pulls)
    }

    private func stop(_ pulls: [String: Pull]) async {
        await withTaskGroup(of: Void.self) { group in
            for pull in pulls.values { group.addTask { await pull.replicator.stop() } }
        }
        state.withLock { state in
            for (database, pull) in pulls {
                let status = pull.replicator.status
                var total = state.carried[database] ?? ReplicationStatus()
                total.docsRead += status.docsRead
                total.docsWritten += status.docsWritten
                total.docWriteFailures += status.docWriteFailures
                total.checkpointedSequence = status.checkpointedSequence ?? total.checkpointedSequence
                state.carried[database] = total
            }
        }
        for pull in pulls.values {
            pull.watch.cancel()
            Task { await pull.endpoint.shutdown() }
        }
    }

    private func set(_ new: ConnectionState, reason: String?) {
        state.withLock { state in
            state.state = new
            state.address = new == .online ? state.address : nil
            state.reason = reason
        }
    }

    /// What trying a peer's addresses found.
    private enum Probe {
        /// The peer answers at this address with this certificate.
        case reached(String, NIOSSLCertificate)
        /// No address answered with the peer's certificate; why, per address.
        case failed(String)
    }

    /// The first of `candidates` where a TLS handshake shows the peer's certificate
    /// (all are tried at once; each gets a few seconds), with that certificate; or why none did.
    private func probe(_ candidates: [String]) async -> Probe {
        let (results, continuation) = AsyncStream.makeStream(of: Result<(String, NIOSSLCertificate), EndpointError>.self)
        let expected = peer.id.fingerprint
        var probes: [Task<Void, Never>] = []
        for candidate in candidates {
            guard let (host, port) = HostPort.split(candidate) else {
                continuation.yield(.failure(.cannotConnect(candidate, "not an address")))
                continue
            }
            probes.append(Task {
                do throws(EndpointError) {
                    let certificate = try await PeerTrust.fetchCertificate(host: host, port: port, expected: expected, endpoint: candidate,
                                                                            deadline: ReplicatorTuning.peerProbeDeadline)
                    continuation.yield(.success((candidate, certificate)))
                } catch {
                    continuation.yield(.failure(error))
                }
            })
        }
        defer { for probe in probes { probe.cancel() } }
        var failures: [String] = []
        for await result in results {
            switch result {
            case .success(let (address, certificate)): return .reached(address, certificate)
            case .failure(let error): failures.append(Self.place(error.reason, at: error.endpoint))
            }
            if failures.count == candidates.count { break }
        }
        return .failed(failures.joined(separator: "; "))
    }
}
