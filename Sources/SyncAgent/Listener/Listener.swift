import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import NIOSSL
import ServiceLifecycle
import Store
import Synchronization

/// How a listener serves: address, TLS, authentication and size limits.
public struct ListenerConfiguration: Sendable {
    /// The address to bind.
    public var host = "127.0.0.1"
    /// The TCP port; 0 lets the system pick a free one.
    public var port = 0
    /// Serve HTTPS with the node's certificate instead of HTTP.
    public var tls = false
    /// Refuse anonymous requests (CouchDB's `require_valid_user`).
    public var requireAuthentication = false
    /// The largest JSON request body accepted, in bytes (413 beyond).
    public var maximumRequestSize = 64 << 20
    /// The largest attachment accepted, in bytes (413 beyond).
    public var maximumAttachmentSize = 1 << 32
    /// How long an `AuthSession` cookie stays valid, in seconds.
    public var sessionTimeout = 600
    /// The CouchDB version reported by `GET /`; replicators check it.
    public var couchVersion = "3.3.3"

    /// Loopback, a port picked by the system, plain HTTP, anonymous access allowed.
    public init() {}
}

/// The listener: serves the databases of a catalog over the Apache CouchDB
/// HTTP API, so that any CouchDB-compatible replicator can sync with this node.
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
    /// How the listener serves.
    public let configuration: ListenerConfiguration
    let feeds = FeedCounter()
    let sessions: SessionCookies
    let logger: Logger

    /// A listener over `catalog`.
    public init(catalog: Catalog, identity: NodeIdentity, users: UserStore, configuration: ListenerConfiguration,
                logger: Logger = Logger(label: "syncd.listener")) {
        self.catalog = catalog
        self.identity = identity
        self.users = users
        self.configuration = configuration
        self.sessions = SessionCookies(timeout: configuration.sessionTimeout)
        self.logger = logger
    }

    /// Change feeds (continuous, longpoll, eventsource) being served right now.
    public var openFeeds: Int { feeds.count }

    /// The HTTP server as a service; `onListening` gets the URL once the socket is bound.
    public func service(onListening: @escaping @Sendable (String) async -> Void = { _ in }) throws -> some Service {
        let responder = CouchResponder(listener: self)
        // Connections that send and receive nothing for this long are closed, so a
        // vanished client holds nothing (feeds send heartbeats or end sooner).
        let http1 = HTTPServerBuilder.http1(configuration: .init(idleTimeout: .seconds(300)))
        let server: HTTPServerBuilder
        if configuration.tls {
            server = try .tls(http1, tlsConfiguration: try identity.serverTLSConfiguration())
        } else {
            server = http1
        }
        let scheme = configuration.tls ? "https" : "http"
        let host = configuration.host
        return Application(
            responder: responder,
            server: server,
            configuration: ApplicationConfiguration(address: .hostname(host, port: configuration.port), serverName: "syncd"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                let shown = host.contains(":") ? "[\(host)]" : host
                await onListening("\(scheme)://\(shown):\(port)")
            },
            logger: logger
        )
    }
}

/// Counts the long-lived change feeds being served, so tests and status can
/// see that a feed's task ended when its client went away.
final class FeedCounter: Sendable {
    private let value = Atomic<Int>(0)
    var count: Int { value.load(ordering: .relaxed) }
    func opened() { value.add(1, ordering: .relaxed) }
    func closed() { value.subtract(1, ordering: .relaxed) }
}
