import Discovery
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Locking
import Logging
import ServiceLifecycle
import Store

/// The agent `syncd agent` runs: it owns the data directory, serves it over
/// HTTPS on the LAN and on a control socket, advertises itself and browses
/// for peers with Avahi, and keeps every database shared with every paired
/// peer in sync (one ``PeerLink`` per peer), and every configured remote too.
///
/// ```swift
/// let agent = try Agent(directory: "/var/lib/syncd", configurationPath: "/etc/syncd/syncd.toml",
///                       controlSocket: "/run/syncd/control.sock", logger: logger)
/// try await ServiceGroup(services: [agent], ...).run()   // until SIGTERM
/// ```
///
/// `reload()` (SIGHUP) rereads the configuration: replications whose settings
/// did not change keep running.
public final class Agent: Service, RunningAgent, Sendable {
    /// The node run: the directory lock, databases, identity, users and peers.
    public let node: Node
    /// Where the control socket is.
    public let controlSocket: String
    /// Where the configuration is read from.
    public let configurationPath: String
    /// How the listener serves (its address and limits are read once, at start).
    private let listenerConfiguration: ListenerConfiguration
    private let addresses = AddressBook()
    /// Shared by every pull into each database, so a revision arriving over several links is fetched once.
    private let claims = DatabaseClaims()
    private let logger: Logger
    private let started = Date()
    private let state: Locked<State>
    /// The reloads applied (logged); held while a reload reads and applies the file.
    private let reloading = Locked(0)
    /// The placements that moved a pull (logged); held while the feed ring is worked out and
    /// applied, so the last to apply saw the latest links.
    private let placingFeeds = Locked(0)

    private struct State {
        var configuration: AgentConfiguration
        var links: [String: (link: PeerLink, task: Task<Void, Never>)] = [:]
        var remotes: [AgentConfiguration.RemoteDatabase: RemoteLink] = [:]
        /// Where the listener is bound; its URLs follow this node's addresses.
        var listener: ListenerRecord?
        var advertiser: Advertiser?
        var browser: Browser?
        var discovery = AgentStatus.Discovery(state: "starting", reason: nil)
        var recordedPeers: [String: [String]] = [:]
    }

    /// Claims `directory` (throws if another process serves it) and reads the configuration
    /// at `configurationPath` (a missing file is the defaults; an invalid one throws).
    public init(directory: String, configurationPath: String, controlSocket: String, logger: Logger) throws {
        let configuration = try AgentConfiguration.load(path: configurationPath)
        var listener = ListenerConfiguration()
        // `::` (the default) takes IPv4 too; a host without IPv6 listens on every IPv4 address.
        listener.host = configuration.listenHost == "::" && !LocalAddresses.canListenOnIPv6 ? "0.0.0.0" : configuration.listenHost
        listener.port = configuration.listenPort
        listener.limits = configuration.listenerLimits
        listener.maximumRequestSize = configuration.maximumRequestSize
        listener.maximumAttachmentSize = configuration.maximumAttachmentSize
        listener.tls = true
        listenerConfiguration = listener
        node = try Node(directory: directory, name: configuration.name ?? NodeName.current,
                        maximumDocumentSize: configuration.maximumDocumentSize, logger: logger)
        // Users, peers and invitations that cannot be read stop the agent here, before it would
        // take everyone for a stranger; once read, a file broken later keeps its last content.
        _ = try node.stateFaults()
        self.configurationPath = configurationPath
        self.controlSocket = controlSocket
        self.logger = logger
        state = Locked(State(configuration: configuration))
        apply(configuration)
    }

    /// The configuration in force.
    public var configuration: AgentConfiguration { state.withLock { $0.configuration } }

    /// Serves, advertises, browses and replicates until graceful shutdown (SIGTERM);
    /// then stops the replications (they checkpoint), withdraws the advertisement and
    /// ends the listener. `onListening` gets the listener's URLs once it is bound.
    public func run() async throws {
        try await run(onListening: { _ in })
    }

    /// ``run()``, telling `onListening` the listener's URLs once bound.
    public func run(onListening: @escaping @Sendable ([String]) async -> Void) async throws {
        let listener = Listener(node: node, configuration: listenerConfiguration, agent: self, logger: logger)
        let served = try listener.recordedService { [self] record in
            state.withLock { $0.listener = record }
            let shared = configuration.databases.map(\.name).joined(separator: ", ")
            logger.notice("agent started: listening on \(record.urls.joined(separator: " ")), sharing \(shared)")
            startDiscovery(port: record.port)
            await onListening(record.urls)
        }
        // The control socket accepts before the listener binds, so once systemd hears READY=1
        // (the listener bound) `syncd reload` and `status` reach the agent.
        let (controlBound, bound) = AsyncStream.makeStream(of: Never.self)
        let control = try listener.controlService(path: controlSocket, onBound: { bound.finish() })
        defer { unlink(controlSocket) }
        // Subscribed before the first reconciliation, so no pairing made after it is missed.
        let pairings = node.peers.changes()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await _ in controlBound {}
                try Task.checkCancellation()
                try await served.run()
            }
            group.addTask { try await control.run() }
            group.addTask { [self] in
                await cancelWhenGracefulShutdown {
                    await withTaskGroup(of: Void.self) { watches in
                        // Peers paired, revoked or seen at a new address, through the listener or the control socket.
                        watches.addTask {
                            self.reconcilePeers()
                            for await _ in pairings { self.reconcilePeers() }
                        }
                        watches.addTask { await self.watchOwnAddresses() }
                        // Peers paired or revoked by another hand: peers.json replaced beside the agent.
                        watches.addTask { await self.node.followDirectory(logger: self.logger) }
                    }
                }
                await stopReplications()
                stopDiscovery()
            }
            // Each part ends on graceful shutdown; one failing (the port is taken) ends the others.
            do {
                while try await group.next() != nil {}
            } catch {
                group.cancelAll()
                throw error
            }
        }
    }

    /// Until cancelled: when this node's addresses change, reconnects to every peer
    /// (connections from an old address are dead without knowing it). The kernel tells
    /// of each change to the links and addresses (rtnetlink, ``AddressWatch``), also when
    /// it dropped some, so nothing is looked at on a timer.
    private func watchOwnAddresses() async {
        let changes: AsyncStream<Void>
        do {
            changes = try AddressWatch.changes()
        } catch {
            logger.warning("changes of this node's addresses are not followed: \(error)")
            return
        }
        var own = LocalAddresses.lan()
        for await _ in changes {
            let now = LocalAddresses.lan()
            guard now != own else { continue }
            own = now
            logger.notice("this node's addresses changed to \(now.joined(separator: ", ")); reconnecting to peers")
            for link in state.withLock({ $0.links.values.map(\.link) }) { await link.reconnect() }
        }
    }

    /// Counts the peers online for the metrics.
    private func countPeersOnline() {
        let links = state.withLock { $0.links.values.map(\.link) }
        SyncdMetrics.peersOnline(links.filter { $0.connection.state == .online }.count)
    }

    /// A peer calling this node knows it: a link waiting to try the peer again tries now
    /// (a member that refused this node had not yet heard of it through an introduction).
    public func peerCalled(_ peer: PairedPeer) {
        state.withLock { $0.links[peer.uuid.lowercased()]?.link }?.called()
    }

    /// Rereads the configuration file and applies it (SIGHUP, `syncd reload`); returns once the
    /// replications whose settings changed have stopped and their successors started. An invalid
    /// file changes nothing and is logged. Files are read and applied one reload at a time.
    public func reload() async throws(ConfigurationError) {
        let work = try reloading.withLock { reloads throws(ConfigurationError) -> [Task<Void, Never>] in
            do throws(ConfigurationError) {
                let work = try applyConfigurationFile()
                reloads += 1
                logger.notice("configuration reloaded from \(configurationPath)", metadata: ["reloads": "\(reloads)"])
                return work
            } catch {
                logger.error("configuration not reloaded: \(error)")
                throw error
            }
        }
        for task in work { await task.value }
    }

    /// Reads and applies the file; returns the tasks still stopping and starting replications.
    private func applyConfigurationFile() throws(ConfigurationError) -> [Task<Void, Never>] {
        let configuration = try AgentConfiguration.load(path: configurationPath)
        let previous = self.configuration
        if configuration.listenHost != previous.listenHost || configuration.listenPort != previous.listenPort {
            logger.warning("the listener's address changed in \(configurationPath): it takes effect when the agent restarts")
        }
        if configuration.listenerLimits != previous.listenerLimits || configuration.maximumRequestSize != previous.maximumRequestSize
            || configuration.maximumAttachmentSize != previous.maximumAttachmentSize
            || configuration.maximumDocumentSize != previous.maximumDocumentSize {
            logger.warning("the listener's limits changed in \(configurationPath): they take effect when the agent restarts")
        }
        if configuration.discovery != previous.discovery || configuration.serviceType != previous.serviceType {
            logger.warning("discovery settings changed in \(configurationPath): they take effect when the agent restarts")
        }
        state.withLock { $0.configuration = configuration }
        let work = apply(configuration) + reconcilePeers()
        if let port = state.withLock({ $0.advertiser?.advertisement.port }) {
            try? state.withLock { $0.advertiser }?.update(port: port, txt: [TXTKey.database: advertisedDatabases(configuration)])
        }
        return work
    }

    /// What the agent is doing now.
    public func status() -> AgentStatus {
        let snapshot = state.withLock { ($0.configuration, $0.listener?.urls ?? [], $0.discovery, $0.links.mapValues(\.link), $0.remotes) }
        let (configuration, urls, discovery, links, remotes) = snapshot
        let identity = node.identity
        let paired = (try? node.peers.all()) ?? []
        var peers: [AgentStatus.Peer] = []
        var replications: [AgentStatus.Replication] = []
        let names = Dictionary(paired.map { ($0.id, $0.name) }, uniquingKeysWith: { first, _ in first })
        var sharedWith: [String: [String]] = [:]
        for peer in paired {
            for database in node.sharing.databases(for: peer) { sharedWith[database, default: []].append(peer.name) }
            let link = links[peer.uuid.lowercased()]
            let connection = link?.connection
            peers.append(AgentStatus.Peer(
                name: peer.name, id: peer.id.description, uuid: peer.uuid, pairedAt: peer.pairedAt,
                state: connection?.state.rawValue ?? "offline", address: connection?.address,
                reason: connection?.reason,
                lastSeen: [node.peers.lastSeen(peer), connection?.onlineUntil].compactMap { $0 }.max(),
                databases: node.sharing.databases(for: peer),
                introducedBy: peer.isIntroduced ? peer.introducedBy.map { names[$0] ?? $0.short } : nil))
            let firstHand = link?.firstHand ?? []
            for (database, status) in (link?.replications ?? [:]).sorted(by: { $0.key < $1.key }) {
                var report = Self.report(status, database: database, with: peer.name, direction: "pull")
                report.feed = firstHand.contains(database) ? "first_hand" : "whole"
                replications.append(report)
            }
        }
        for (remote, link) in remotes.sorted(by: { $0.key.url < $1.key.url }) {
            replications.append(Self.report(link.pull.status, database: remote.database, with: remote.url, direction: "pull"))
            replications.append(Self.report(link.push.status, database: remote.database, with: remote.url, direction: "push"))
        }
        let catalog = node.catalog
        let free = Self.freeBytes(catalog.directory)
        let databases = catalog.names().compactMap { name -> AgentStatus.Database? in
            guard let info = try? catalog.database(name).info() else { return nil }
            return AgentStatus.Database(name: name, docCount: info.docCount, docDelCount: info.deletedDocCount,
                                        updateSeq: String(info.updateSequence), sizeOnDisk: info.fileSize,
                                        diskFree: free, sharedWith: sharedWith[name] ?? [])
        }
        return AgentStatus(
            node: .init(name: node.name, uuid: identity.uuid, id: identity.id.description, urls: urls,
                        version: SyncdVersion.current, started: started, dataDirectory: catalog.directory),
            discovery: configuration.discovery ? discovery : .init(state: "disabled", reason: nil),
            peers: peers, replications: replications, databases: databases,
            unreadableFiles: (try? node.stateFaults()).flatMap { $0.isEmpty ? nil : $0.map(\.description) })
    }

    // MARK: Configuration

    /// Shares the configured databases, records static addresses, and starts or stops remotes.
    /// Applies `configuration`; returns the tasks stopping the remotes it no longer wants.
    @discardableResult
    private func apply(_ configuration: AgentConfiguration) -> [Task<Void, Never>] {
        node.sharing.share(configuration.databases)
        for database in configuration.databases { _ = try? node.catalog.openOrCreate(database.name) }
        let paired = (try? node.peers.all()) ?? []
        for peer in paired {
            let configured = configuration.peers.filter { PeerStore.matches(peer, $0.peer) }.flatMap(\.addresses)
            addresses.configure(uuid: peer.uuid, configured)
        }
        return reconcileRemotes(configuration)
    }

    private func reconcileRemotes(_ configuration: AgentConfiguration) -> [Task<Void, Never>] {
        let wanted = Set(configuration.remotes)
        let (stale, missing): ([RemoteLink], [AgentConfiguration.RemoteDatabase]) = state.withLock { state in
            // Gone from the configuration, or its database's filters changed: stopped (and the latter started again).
            let stale = state.remotes.filter { remote, link in
                let filters = configuration.database(remote.database)
                return !wanted.contains(remote) || link.pull.configuration.filter != filters?.pullFilter
                    || link.push.configuration.filter != filters?.pushFilter
            }
            for key in stale.keys { state.remotes.removeValue(forKey: key) }
            return (Array(stale.values), wanted.filter { state.remotes[$0] == nil })
        }
        let stopping = stale.map { link in Task { await link.stop() } }
        for remote in missing {
            do {
                let link = try RemoteLink(remote, database: try node.catalog.openOrCreate(remote.database),
                                          filters: configuration.database(remote.database),
                                          claims: claims.claims(on: remote.database), logger: logger)
                state.withLock { $0.remotes[remote] = link }
                node.activeTasks.register(link.pull, database: remote.database)
                node.activeTasks.register(link.push, database: remote.database)
                link.start()
            } catch {
                logger.error("cannot replicate with \(remote.url): \(error)")
            }
        }
        return stopping
    }

    // MARK: Peers

    /// Starts a link for each new peer, restarts those whose databases or filters
    /// changed, and stops those no longer paired; returns the tasks of the links changing.
    @discardableResult
    private func reconcilePeers() -> [Task<Void, Never>] {
        guard let paired = try? node.peers.all() else { return [] }
        let configuration = self.configuration
        var wanted: [String: (PairedPeer, [String: ReplicationFilter?])] = [:]
        for peer in paired {
            let databases = node.sharing.databases(for: peer)
            let filters = Dictionary(uniqueKeysWithValues: databases.map { ($0, configuration.database($0)?.pullFilter(for: peer)) })
            wanted[peer.uuid.lowercased()] = (peer, filters)
            if state.withLock({ $0.recordedPeers[peer.uuid.lowercased()] != peer.addresses }) {
                state.withLock { $0.recordedPeers[peer.uuid.lowercased()] = peer.addresses }
                addresses.record(uuid: peer.uuid, peer.addresses)
                let configured = configuration.peers.filter { PeerStore.matches(peer, $0.peer) }.flatMap(\.addresses)
                addresses.configure(uuid: peer.uuid, configured)
            }
        }
        let context = PeerLink.Context(catalog: node.catalog, identity: node.identity, addresses: addresses,
                                       activeTasks: node.activeTasks, claims: claims, logger: logger,
                                       connectionChanged: { [weak self] in
                                           self?.countPeersOnline()
                                           self?.placeFeeds()
                                       }, peers: node.peers)
        let (stopped, changed): ([Task<Void, Never>], [(PeerLink, [String: ReplicationFilter?])]) = state.withLock { state in
            var stopped: [Task<Void, Never>] = []
            var changed: [(PeerLink, [String: ReplicationFilter?])] = []
            for (uuid, entry) in state.links {
                // Revoked, or paired anew (maybe after a revocation): a new link starts at once.
                guard let (peer, filters) = wanted[uuid], peer.id == entry.link.peer.id,
                      peer.pairedAt == entry.link.peer.pairedAt else {
                    stopped.append(entry.task)
                    state.links.removeValue(forKey: uuid)
                    continue
                }
                if filters != entry.link.databases { changed.append((entry.link, filters)) }
            }
            for (uuid, (peer, filters)) in wanted where state.links[uuid] == nil {
                let link = PeerLink(peer: peer, databases: filters, context: context)
                state.links[uuid] = (link, Task { await link.run() })
            }
            return (stopped, changed)
        }
        for task in stopped { task.cancel() }
        if !stopped.isEmpty { countPeersOnline() }
        // Databases added, removed or refiltered: the link's other replications keep running.
        let updates = changed.map { link, filters in link.update(databases: filters) }
        return updates + placeFeeds()
    }

    /// Works out from the links which peers' feeds are read whole and which first-hand only
    /// (``FeedRing``), and moves the pulls whose kind changed; returns their tasks.
    @discardableResult
    private func placeFeeds() -> [Task<Void, Never>] {
        placingFeeds.withLock { placements in
            let links = state.withLock { $0.links.values.map(\.link) }
            let ring = FeedRing(ownID: node.identity.id)
            // A private pairing, or a database not introduced, is outside the ring: others may not know
            // the peer, so what it relays reaches them through this node, which reads its whole feed.
            let sharing = node.sharing
            let firstHand = ring.firstHand(links.map { link in
                FeedRing.Member(id: link.peer.id, databases: link.peer.introduce ? Set(link.databases.keys.filter(sharing.introduces)) : [],
                                present: !link.isAway)
            })
            let moved = links.filter { (firstHand[$0.peer.id] ?? []) != $0.firstHand }
            guard !moved.isEmpty else { return [] }
            placements += 1
            logger.debug("feeds placed; first-hand only now: \(moved.map { "\($0.peer.name): \((firstHand[$0.peer.id] ?? []).sorted().joined(separator: ","))" }.sorted().joined(separator: "; "))",
                         metadata: ["placements": "\(placements)"])
            return moved.map { $0.update(firstHand: firstHand[$0.peer.id] ?? []) }
        }
    }

    private func stopReplications() async {
        let (links, remotes) = state.withLock { state in
            let taken = (Array(state.links.values), Array(state.remotes.values))
            state.links = [:]
            state.remotes = [:]
            return taken
        }
        await withTaskGroup(of: Void.self) { group in
            for entry in links {
                entry.task.cancel()
                group.addTask { await entry.task.value }
            }
            for remote in remotes { group.addTask { await remote.stop() } }
        }
    }

    // MARK: Discovery

    private func advertisedDatabases(_ configuration: AgentConfiguration) -> String {
        var text = ""
        for name in configuration.databases.map(\.name) where text.utf8.count + name.utf8.count < 200 {
            text += (text.isEmpty ? "" : ",") + name
        }
        return text
    }

    private func startDiscovery(port: Int) {
        let configuration = self.configuration
        guard configuration.discovery else { return }
        let identity = node.identity
        do {
            let advertiser = try Advertiser(try Advertisement.syncd(
                uuid: identity.uuid, database: advertisedDatabases(configuration), port: UInt16(port), tls: true,
                fingerprint: identity.id.fingerprint, name: Advertisement.defaultName(uuid: identity.uuid),
                type: configuration.serviceType), logger: logger)
            let browser = try Browser(type: configuration.serviceType, logger: logger)
            state.withLock {
                $0.advertiser = advertiser
                $0.browser = browser
            }
            advertiser.publish()
            Task { [addresses] in
                for await event in browser.peerEvents(excluding: identity.uuid) { addresses.discovered(event) }
            }
            Task { [self] in
                for await status in browser.statusUpdates() {
                    let report: AgentStatus.Discovery = switch status {
                    case .available: .init(state: "running", reason: nil)
                    case .unavailable(let why): .init(state: "unavailable", reason: why.description)
                    }
                    // Logged when the state changes, not when only the reason does (each retry's).
                    let changed = state.withLock { state in
                        defer { state.discovery = report }
                        return state.discovery.state != report.state
                    }
                    if changed {
                        if report.state == "running" { logger.notice("discovery running") } else {
                            logger.warning("discovery unavailable (serving and replicating with known addresses): \(report.reason ?? "")")
                        }
                    }
                }
            }
        } catch {
            state.withLock { $0.discovery = .init(state: "unavailable", reason: "\(error)") }
            logger.error("discovery cannot start: \(error)")
        }
    }

    private func stopDiscovery() {
        let (advertiser, browser) = state.withLock { state in
            defer {
                state.advertiser = nil
                state.browser = nil
            }
            return (state.advertiser, state.browser)
        }
        advertiser?.withdraw()
        advertiser?.close()
        browser?.close()
    }

    // MARK: Status helpers

    private static func report(_ status: ReplicationStatus, database: String, with: String, direction: String) -> AgentStatus.Replication {
        AgentStatus.Replication(
            database: database, with: with, direction: direction, state: status.activity.rawValue,
            docsRead: status.docsRead, docsWritten: status.docsWritten, docWriteFailures: status.docWriteFailures,
            changesPending: status.changesPending, checkpointedSeq: status.checkpointedSequence?.description,
            lastError: status.lastError.map { $0.reason })
    }

    private static func freeBytes(_ directory: String) -> Int? {
        var info = statvfs()
        guard statvfs(directory, &info) == 0 else { return nil }
        return Int(info.f_bavail) * Int(info.f_frsize)
    }
}
