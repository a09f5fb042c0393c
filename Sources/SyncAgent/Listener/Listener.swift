import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
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
    /// The largest attachment accepted, in bytes: 413 `attachment_too_large`, from the
    /// `Content-Length` before any byte is read, or as soon as a streamed body passes it.
    /// (The largest document is the node's: see ``Node/defaultMaximumDocumentSize``.)
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

/// The listener: serves a ``Node``'s databases over the Apache CouchDB HTTP
/// API, so that any CouchDB-compatible replicator can sync with this node.
/// It holds only what serving needs (connections, sessions, attempt limits);
/// the node holds the state.
///
/// Nothing is open by default: paired peers authenticate by their TLS client
/// certificates and reach the databases shared with them; users log in and
/// reach what they are granted; anonymous clients get 401. Pairing
/// invitations are accepted at `POST /_pair`.
///
/// ```swift
/// let node = try Node(directory: directory)
/// let listener = Listener(node: node, configuration: .init())
/// let service = try listener.service { url in print("listening on \(url)") }
/// try await service.run()   // until cancelled
/// ```
public final class Listener: Sendable {
    /// The node served.
    public let node: Node
    /// How the listener serves.
    public let configuration: ListenerConfiguration
    /// The running agent: `GET /_syncd` serves its status (server admins and the control socket),
    /// and it hears of each peer's new connections.
    let agent: (any RunningAgent)?
    /// The waiting change feeds, per client address.
    let feeds: ClientSlots
    /// The rows of the continuous feeds' latest pages, written once for every feed sending them.
    let feedRows = FeedRows()
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

    /// A listener over `node`; `agent`, when an agent runs the node, answers `GET /_syncd` and hears the peers call.
    public init(node: Node, configuration: ListenerConfiguration, agent: (any RunningAgent)? = nil,
                logger: Logger = Logger(label: "syncd.listener")) {
        self.node = node
        self.configuration = configuration
        self.agent = agent
        self.sessions = SessionCookies(timeout: configuration.sessionTimeout, secure: configuration.tls)
        self.feeds = ClientSlots(maximumPerClient: configuration.limits.maximumFeedsPerClient)
        self.connectionSlots = ConnectionPool(maximum: configuration.limits.maximumConnections,
                                              maximumPerClient: configuration.limits.maximumConnectionsPerClient)
        self.pendingConnections = ConnectionPool(maximum: configuration.limits.maximumPendingConnections)
        self.connectionCuts = ConnectionCuts(logger: logger)
        self.logger = logger
    }

    /// Closes the connections of peers whose pairing was revoked.
    func closeRevokedConnections() {
        connections.closePeers { node.peers.peer(id: $0) == nil }
    }

    /// Change feeds (continuous, longpoll, eventsource) being served right now.
    public var openFeeds: Int { feeds.count }

    /// The HTTP server as a service, with its ``ListenerHousekeeping``; `onListening` gets the URL once the socket is bound.
    public func service(onListening: @escaping @Sendable (String) async -> Void = { _ in }) throws -> some Service {
        _ = Self.descriptorsRaised
        let responder = ListenerResponder(listener: self)
        let limits = ConnectionLimits(pending: pendingConnections, slots: connectionSlots, peers: node.peers,
                                      handshakeTimeout: TimeAmount(configuration.limits.handshakeTimeout),
                                      requestHeadTimeout: TimeAmount(configuration.limits.requestHeadTimeout),
                                      requestBodyTimeout: TimeAmount(configuration.limits.requestBodyTimeout), cuts: connectionCuts)
        let http1 = HTTPServerBuilder.http1(configuration: .init(
            additionalChannelHandlers: [ConnectionLimitHandler(limits: limits)], idleTimeout: TimeAmount(configuration.limits.idleTimeout)))
        let server: HTTPServerBuilder
        if configuration.tls {
            server = try .tls(http1, configuration: TLSChannelConfiguration(
                tlsConfiguration: try TLSSettings.server(node.identity),
                customVerificationCallback: TLSSettings.acceptClientCertificate))
        } else {
            server = http1
        }
        let scheme = configuration.tls ? "https" : "http"
        let host = configuration.host
        return ListenerHousekeeping(listener: self, server: HTTPService(
            responder: responder,
            server: server,
            address: .hostname(host, port: configuration.port),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                let shown = host.contains(":") ? "[\(host)]" : host
                await onListening("\(scheme)://\(shown):\(port)")
            },
            logger: logger
        ))
    }

    /// ``service(onListening:)``, recording where it listens: once bound, `listener.json`
    /// records the address, systemd hears `READY=1` (see ``SystemdNotifier``), and
    /// `onListening` gets the record. The record is removed when it stops; systemd hears
    /// `STOPPING=1` when graceful shutdown begins.
    public func recordedService(notifier: SystemdNotifier = SystemdNotifier(),
                                onListening: @escaping @Sendable (ListenerRecord) async -> Void = { _ in }) throws -> some Service {
        let directory = node.directory
        let configuration = configuration
        let logger = logger
        let recorded = RecordedService(directory: directory, inner: try service { url in
            let port = url.split(separator: ":").last.flatMap { Int($0) } ?? configuration.port
            let record = ListenerRecord(port: port, host: configuration.host, tls: configuration.tls)
            do { try record.save(in: directory) } catch { logger.warning("cannot record the listener: \(error)") }
            notifier.ready(status: "listening on " + record.urls.joined(separator: " "))
            await onListening(record)
        })
        return NotifiedService(notifier: notifier, inner: recorded)
    }
}

/// The running agent, as its listener reaches it: the control API (`GET /_syncd`, `POST /_syncd/reload`)
/// and the peers' calls.
public protocol RunningAgent: Sendable {
    /// What the agent is doing now.
    func status() -> AgentStatus
    /// Rereads the configuration file and applies it before returning; an invalid file changes nothing.
    func reload() async throws(ConfigurationError)
    /// A paired peer opened a connection and made its first request on it: it knows this node now.
    func peerCalled(_ peer: PairedPeer)
}

/// A service that removes `listener.json` when it ends.
private struct RecordedService<Inner: Service>: Service {
    let directory: String
    let inner: Inner

    func run() async throws {
        defer { ListenerRecord.remove(in: directory) }
        try await inner.run()
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
    /// `replicate` to a local database). A stale socket file is replaced;
    /// `onBound` runs once the socket accepts. A path longer than a Unix socket's address
    /// holds throws ``ControlSocketPathTooLong``.
    public func controlService(path: String, onBound: @escaping @Sendable () -> Void = {}) throws -> some Service {
        guard path.utf8.count <= ControlSocketPathTooLong.longest else { throw ControlSocketPathTooLong(path: path) }
        unlink(path)
        let logger = logger
        return HTTPService(
            responder: ListenerResponder(listener: self),
            server: HTTPServerBuilder.http1(configuration: .init(idleTimeout: TimeAmount(configuration.limits.idleTimeout))),
            address: .unixDomainSocket(path: path),
            onServerRunning: { _ in
                if chmod(path, 0o660) != 0 { logger.error("cannot restrict the control socket \(path): errno \(errno)") }
                onBound()
            },
            logger: logger
        )
    }
}

/// A control socket path longer than a Unix socket's address holds (107 bytes on Linux).
public struct ControlSocketPathTooLong: Error, CustomStringConvertible {
    /// The path asked for.
    public let path: String
    static let longest = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    public var description: String {
        "the control socket path \(path) is \(path.utf8.count) bytes long; a Unix socket's may have \(Self.longest) at most: "
            + "use a shorter data directory, or --control-socket PATH"
    }
}
