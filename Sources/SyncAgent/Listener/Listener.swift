import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Locking
import Logging
import NIOCore
import NIOSSL
import ServiceLifecycle
import Store

/// How a listener serves: address, TLS and size limits. Who may do what is
/// not configured here: see ``Listener`` and `Auth/Authorization.swift`.
public struct ListenerConfiguration: Sendable {
    /// The address to bind.
    public var host = "127.0.0.1"
    /// The TCP port; 0 lets the system pick a free one.
    public var port = 0
    /// Serve HTTPS with the node's certificate instead of HTTP (needed for
    /// paired peers, who authenticate by their client certificates).
    public var tls = false
    /// The largest JSON request body accepted, in bytes (413 beyond).
    public var maximumRequestSize = 64 << 20
    /// The largest attachment accepted, in bytes (413 beyond).
    public var maximumAttachmentSize = 1 << 32
    /// How long connections may take and how many strangers may hold.
    public var limits = ListenerLimits()
    /// How long a database goes unasked for before the listener gives back the
    /// memory it holds (its SQLite caches); it is used again as usual.
    public var databaseIdleTime: Duration = .seconds(60)
    /// How long an `AuthSession` cookie stays valid, in seconds.
    public var sessionTimeout = 600
    /// The CouchDB version reported by `GET /`: the release whose documented
    /// API and replication protocol the listener follows. Clients read only its
    /// major version (3: `_bulk_get`, `_local` checkpoints, opaque sequences).
    public var couchVersion = "3.5.0"

    /// Loopback, a port picked by the system, plain HTTP.
    public init() {}
}

/// The listener: serves the databases of a catalog over the Apache CouchDB
/// HTTP API, so that any CouchDB-compatible replicator can sync with this node.
///
/// Nothing is open by default: paired peers authenticate by their TLS client
/// certificates and reach the databases shared with them; users log in and
/// reach what they are granted; anonymous clients get 401. Pairing
/// invitations are accepted at `POST /_pair`.
///
/// ```swift
/// let listener = Listener(catalog: catalog, identity: identity, users: users, configuration: .init())
/// let service = try listener.service { url in print("listening on \(url)") }
/// try await service.run()   // until cancelled
/// ```
public final class Listener: Sendable {
    /// The databases served.
    public let catalog: Catalog
    /// The node's UUID, key and certificate.
    public let identity: NodeIdentity
    /// Who may log in.
    public let users: UserStore
    /// The paired peers.
    public let peers: PeerStore
    /// The pairing invitations this node made.
    public let invitations: InvitationStore
    /// The name this node gives itself when pairing.
    public let name: String
    /// How the listener serves.
    public let configuration: ListenerConfiguration
    /// What peers may replicate beyond their pairings, and with which push filters.
    public let sharing = PeerSharing()
    /// The running agent's status, served at `GET /_syncd` (server admins and the control socket).
    let agentStatus = Locked<(@Sendable () -> AgentStatus?)?>(nil)
    /// The replications running in this process, served at `/_active_tasks` and `/_scheduler/*`.
    public let activeTasks: ActiveTasks
    /// The waiting change feeds, per client address.
    let feeds: ClientSlots
    /// The open connections of clients other than paired peers that sent a request, in all and per client address.
    let connectionSlots: ConnectionPool
    /// The connections that have not sent a request yet.
    let pendingConnections: ConnectionPool
    /// Connections closed or refused by the deadlines and budgets.
    let connectionCuts: ConnectionCuts
    let sessions: SessionCookies
    let connections = Connections()
    /// Failed logins per client address.
    let passwordAttempts = AttemptLimiter(burst: 10, interval: 1)
    /// Failed pairing attempts per client address.
    let pairingAttempts = AttemptLimiter(burst: 5, interval: 10)
    let logger: Logger

    /// A listener over `catalog`; peers and invitations default to those of the catalog's data directory.
    public init(catalog: Catalog, identity: NodeIdentity, users: UserStore, peers: PeerStore? = nil,
                invitations: InvitationStore? = nil, name: String = NodeName.current, configuration: ListenerConfiguration,
                activeTasks: ActiveTasks = ActiveTasks(), logger: Logger = Logger(label: "syncd.listener")) {
        self.catalog = catalog
        self.identity = identity
        self.users = users
        self.peers = peers ?? PeerStore(directory: catalog.directory)
        self.invitations = invitations ?? InvitationStore(directory: catalog.directory)
        self.name = name
        self.configuration = configuration
        self.activeTasks = activeTasks
        self.sessions = SessionCookies(timeout: configuration.sessionTimeout)
        self.feeds = ClientSlots(maximumPerClient: configuration.limits.maximumFeedsPerClient)
        self.connectionSlots = ConnectionPool(maximum: configuration.limits.maximumConnections,
                                              maximumPerClient: configuration.limits.maximumConnectionsPerClient)
        self.pendingConnections = ConnectionPool(maximum: configuration.limits.maximumPendingConnections)
        self.connectionCuts = ConnectionCuts(logger: logger)
        self.logger = logger
    }

    /// Closes the connections of peers whose pairing was revoked (by this
    /// process or by `syncd peers remove` beside it).
    public func closeRevokedConnections() {
        connections.closePeers { peers.peer(id: $0) == nil }
    }

    /// Change feeds (continuous, longpoll, eventsource) being served right now.
    public var openFeeds: Int { feeds.count }

    /// The HTTP server as a service; `onListening` gets the URL once the socket is bound.
    public func service(onListening: @escaping @Sendable (String) async -> Void = { _ in }) throws -> some Service {
        _ = Self.descriptorsRaised
        let responder = ListenerResponder(listener: self)
        let limits = ConnectionLimits(pending: pendingConnections, slots: connectionSlots, peers: peers,
                                      handshakeTimeout: TimeAmount(configuration.limits.handshakeTimeout),
                                      requestHeadTimeout: TimeAmount(configuration.limits.requestHeadTimeout), cuts: connectionCuts)
        let http1 = HTTPServerBuilder.http1(configuration: .init(
            additionalChannelHandlers: [ConnectionLimitHandler(limits: limits)], idleTimeout: TimeAmount(configuration.limits.idleTimeout)))
        let server: HTTPServerBuilder
        if configuration.tls {
            server = try .tls(http1, configuration: TLSChannelConfiguration(
                tlsConfiguration: try TLSSettings.server(identity),
                customVerificationCallback: TLSSettings.acceptClientCertificate))
        } else {
            server = http1
        }
        let scheme = configuration.tls ? "https" : "http"
        let host = configuration.host
        return ListenerService(listener: self, server: Application(
            responder: responder,
            server: server,
            configuration: ApplicationConfiguration(address: .hostname(host, port: configuration.port), serverName: "syncd"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                let shown = host.contains(":") ? "[\(host)]" : host
                await onListening("\(scheme)://\(shown):\(port)")
            },
            logger: logger
        ))
    }
}

extension Listener {
    /// The process may open at least 8,192 descriptors where its hard limit allows
    /// (a shell's soft limit is often 1,024): room for the pending and the strangers'
    /// budgets with paired peers, the control socket and the databases beside them.
    private static let descriptorsRaised: Void = {
        var limit = rlimit()
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        guard getrlimit(resource, &limit) == 0, limit.rlim_cur < 8192 else { return }
        limit.rlim_cur = min(limit.rlim_max, 8192)
        _ = setrlimit(resource, &limit)
    }()

    /// The same API on a Unix socket at `path` (mode 0660: the owner and its
    /// group), where every request is the data directory's owner: how other
    /// `syncd` commands work through a running agent (`syncd status`,
    /// `replicate` to a local database). A stale socket file is replaced.
    public func controlService(path: String) throws -> some Service {
        unlink(path)
        let logger = logger
        return Application(
            responder: ListenerResponder(listener: self),
            server: HTTPServerBuilder.http1(configuration: .init(idleTimeout: TimeAmount(configuration.limits.idleTimeout))),
            configuration: ApplicationConfiguration(address: .unixDomainSocket(path: path), serverName: "syncd"),
            onServerRunning: { _ in
                if chmod(path, 0o660) != 0 { logger.error("cannot restrict the control socket \(path): errno \(errno)") }
            },
            logger: logger
        )
    }
}

/// The HTTP server and, beside it, the watch that closes revoked peers'
/// connections, releases the memory of databases gone idle and logs the
/// connections cut.
struct ListenerService<Server: Service>: Service {
    let listener: Listener
    let server: Server

    func run() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            group.addTask {
                // A revocation made by another process is seen within a second.
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(1))
                    listener.closeRevokedConnections()
                    listener.catalog.releaseIdle(after: listener.configuration.databaseIdleTime)
                    listener.connectionCuts.report()
                }
            }
            try await group.next()
            group.cancelAll()
        }
    }
}
