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
        let logger: Logger
    }

    /// What the link is doing.
    enum State: String, Sendable {
        case connecting, online, offline
    }

    /// The peer, as paired.
    let peer: PairedPeer
    /// The databases pulled, with the pull filter of each.
    let databases: [String: ReplicationFilter?]
    private let context: Context
    private let state = Locked<(state: State, address: String?, reason: String?, replications: [String: Replicator])>(
        (.connecting, nil, nil, [:]))

    init(peer: PairedPeer, databases: [String: ReplicationFilter?], context: Context) {
        self.peer = peer
        self.databases = databases
        self.context = context
    }

    /// The peer's state, address in use and, when offline, why.
    var connection: (state: State, address: String?, reason: String?) {
        state.withLock { ($0.state, $0.address, $0.reason) }
    }

    /// The replications running now, by database.
    var replications: [String: Replicator] { state.withLock { $0.replications } }

    /// Keeps the databases in sync until cancelled; stops the replications (they checkpoint) before returning.
    func run() async {
        let wakes = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let uuid = peer.uuid.lowercased()
        let watch = Task {
            for await changed in context.addresses.changes() where changed == uuid { wakes.continuation.yield() }
        }
        defer { watch.cancel() }
        var failures = 0
        var running: (address: String, replicators: [Replicator], endpoints: [RemoteEndpoint], watches: [Task<Void, Never>])?
        var wake = wakes.stream.makeAsyncIterator()
        while !Task.isCancelled {
            let candidates = context.addresses.candidates(for: uuid).map(\.address)
            // Keep a working address while it is still a candidate and still answers.
            if let current = running, candidates.contains(current.address),
               await reachable(among: [current.address]) != nil {
                failures = 0
                _ = await wake.next()
                continue
            }
            if let current = running {
                await stop(current.replicators, current.endpoints, current.watches)
                running = nil
            }
            guard !candidates.isEmpty else {
                set(.offline, address: nil, reason: "no address known (not seen on the LAN, none configured)")
                _ = await wake.next()
                continue
            }
            set(.connecting, address: nil, reason: nil)
            guard let (address, certificate) = await reachable(among: candidates) else {
                failures += 1
                set(.offline, address: nil, reason: "not answering at \(candidates.joined(separator: ", "))")
                // Tried again when the address book changes, or after a growing pause.
                let pause = RetryPolicy(initialDelay: .seconds(2), maximumDelay: .seconds(30)).delay(afterFailures: failures)
                let timer = Task { [wakes] in
                    try? await Task.sleep(for: pause)
                    wakes.continuation.yield()
                }
                _ = await wake.next()
                timer.cancel()
                continue
            }
            failures = 0
            running = start(at: address, certificate: certificate, wake: wakes.continuation)
            set(.online, address: address, reason: nil)
            context.logger.info("replicating with \(peer.name) at \(address)")
            _ = await wake.next()
        }
        if let current = running { await stop(current.replicators, current.endpoints, current.watches) }
        set(.offline, address: nil, reason: "stopped")
    }

    /// Starts pulling every database from `address`; a replication going offline wakes the link.
    private func start(at address: String, certificate: NIOSSLCertificate,
                       wake: AsyncStream<Void>.Continuation) -> (String, [Replicator], [RemoteEndpoint], [Task<Void, Never>]) {
        var replicators: [String: Replicator] = [:]
        var endpoints: [RemoteEndpoint] = []
        var watches: [Task<Void, Never>] = []
        for (database, filter) in databases.sorted(by: { $0.key < $1.key }) {
            do {
                let url = try RemoteURL("https://\(address)/\(PathEncoding.segment(database))")
                let remote = RemoteEndpoint(RemoteEndpoint.Configuration(
                    url: url, trust: .certificate(certificate), peerUUID: peer.uuid,
                    connectTimeout: .seconds(5), clientIdentity: context.identity), logger: context.logger)
                var configuration = ReplicationConfiguration(source: remote, target: LocalEndpoint(try context.catalog.openOrCreate(database)))
                configuration.continuous = true
                configuration.filter = filter
                configuration.retry = RetryPolicy(initialDelay: .seconds(1), maximumDelay: .seconds(30))
                let replicator = Replicator(configuration, logger: context.logger)
                replicator.start()
                watches.append(Task {
                    for await status in replicator.statusUpdates() where status.activity == .offline { wake.yield() }
                })
                replicators[database] = replicator
                endpoints.append(remote)
            } catch {
                context.logger.error("cannot replicate \(database) with \(peer.name): \(error)")
            }
        }
        state.withLock { $0.replications = replicators }
        return (address, Array(replicators.values), endpoints, watches)
    }

    private func stop(_ replicators: [Replicator], _ endpoints: [RemoteEndpoint], _ watches: [Task<Void, Never>]) async {
        await withTaskGroup(of: Void.self) { group in
            for replicator in replicators { group.addTask { await replicator.stop() } }
        }
        for watch in watches { watch.cancel() }
        for endpoint in endpoints { await endpoint.shutdown() }
        state.withLock { $0.replications = [:] }
    }

    private func set(_ new: State, address: String?, reason: String?) {
        state.withLock { state in
            state.state = new
            state.address = address
            state.reason = reason
        }
    }

    /// The first of `candidates` where a TLS handshake shows the peer's certificate
    /// (all are tried at once; each gets a few seconds), with that certificate.
    private func reachable(among candidates: [String]) async -> (String, NIOSSLCertificate)? {
        let (results, continuation) = AsyncStream.makeStream(of: (String, NIOSSLCertificate)?.self)
        let expected = peer.id.fingerprint
        var probes: [Task<Void, Never>] = []
        for candidate in candidates {
            guard let (host, port) = HostPort.split(candidate) else { continuation.yield(nil); continue }
            probes.append(Task {
                let certificate = try? await PeerTrust.fetchCertificate(host: host, port: port, expected: expected, endpoint: candidate,
                                                                        deadline: .seconds(3))
                continuation.yield(certificate.map { (candidate, $0) })
            })
        }
        defer { for probe in probes { probe.cancel() } }
        var answered = 0
        for await result in results {
            if let result { return result }
            answered += 1
            if answered == candidates.count { break }
        }
        return nil
    }
}
