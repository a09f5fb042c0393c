import ArgumentParser
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Logging
import ServiceLifecycle
import Store
import SyncAgent
import UnixSignals

/// Serves the databases of the data directory over the CouchDB replication protocol until stopped.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the data directory's databases as a CouchDB-compatible HTTP(S) endpoint.",
        discussion: """
            Prints "listening on URL" for each address clients can use once the socket is bound (port 0 \
            picks a free port), then runs until SIGTERM or SIGINT, finishing open requests before it exits. \
            Nothing is open to anonymous clients: paired peers authenticate by certificate (--tls), users \
            by password (`syncd user add`). One process serves a data directory at a time; other commands (`syncd user`, `peers`, `pair`) \
            reach it through its control socket.
            """
    )

    @OptionGroup var data: DataOptions
    @OptionGroup var control: ControlOptions

    @Option(help: "Address to listen on (0.0.0.0 for every address).")
    var host = "127.0.0.1"

    @Option(help: "TCP port; 0 picks a free one.")
    var port = 5984

    @Flag(help: "Serve HTTPS with the node's self-signed certificate (needed by paired peers).")
    var tls = false

    @Option(name: .customLong("max-request-size"), help: "Largest JSON request body in bytes.")
    var maximumRequestSize = ListenerConfiguration().maximumRequestSize

    @Option(name: .customLong("max-attachment-size"), help: "Largest attachment in bytes (413 beyond, before it is stored).")
    var maximumAttachmentSize = ListenerConfiguration().maximumAttachmentSize

    @Option(name: .customLong("max-document-size"), help: "Largest document in bytes, its JSON without attachments (CouchDB's max_document_size; 413 beyond).")
    var maximumDocumentSize = Node.defaultMaximumDocumentSize

    @Option(name: .customLong("max-connections"), help: "Most connections of clients other than peers open at once (the oldest anonymous one is closed beyond; 503 when all are users').")
    var maximumConnections = ListenerLimits().maximumConnections

    @Option(name: .customLong("max-connections-per-client"), help: "The same from one address (429 when all are users').")
    var maximumConnectionsPerClient = ListenerLimits().maximumConnectionsPerClient

    @Option(name: .customLong("max-pending-connections"), help: "Most connections open at once that have sent no request (the oldest is closed beyond).")
    var maximumPendingConnections = ListenerLimits().maximumPendingConnections

    @Option(name: .customLong("handshake-timeout"), help: "Seconds a connection has to finish its TLS handshake.")
    var handshakeTimeout = Int(ListenerLimits().handshakeTimeout.components.seconds)

    @Option(name: .customLong("request-head-timeout"), help: "Seconds a connection then has to send its first request head.")
    var requestHeadTimeout = Int(ListenerLimits().requestHeadTimeout.components.seconds)

    @Option(name: .customLong("request-body-timeout"), help: "Seconds a request body may send nothing before it gets 408.")
    var requestBodyTimeout = Int(ListenerLimits().requestBodyTimeout.components.seconds)

    @Option(name: .customLong("idle-timeout"), help: "Seconds a connection with no request in flight stays open.")
    var idleTimeout = Int(ListenerLimits().idleTimeout.components.seconds)

    @Option(name: .customLong("database-idle-time"), help: "Seconds a database goes unused before its caches are released.")
    var databaseIdleTime = 60

    @OptionGroup var log: LogOptions

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        guard maximumConnections > 0, maximumConnectionsPerClient > 0, maximumPendingConnections > 0 else {
            throw ValidationError("connection limits must be positive")
        }
        guard handshakeTimeout > 0, requestHeadTimeout > 0, requestBodyTimeout > 0, idleTimeout > 0 else { throw ValidationError("timeouts must be positive") }
        guard maximumRequestSize > 0, maximumAttachmentSize > 0, maximumDocumentSize > 0 else {
            throw ValidationError("size limits must be positive")
        }
        guard databaseIdleTime >= 0 else { throw ValidationError("--database-idle-time must not be negative") }
    }

    func run() async throws {
        let logger = log.logger(label: "syncd", defaultLevel: .info)
        var configuration = ListenerConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.tls = tls
        configuration.maximumRequestSize = maximumRequestSize
        configuration.maximumAttachmentSize = maximumAttachmentSize
        configuration.limits.maximumConnections = maximumConnections
        configuration.limits.maximumConnectionsPerClient = maximumConnectionsPerClient
        configuration.limits.maximumPendingConnections = maximumPendingConnections
        configuration.limits.handshakeTimeout = .seconds(handshakeTimeout)
        configuration.limits.requestHeadTimeout = .seconds(requestHeadTimeout)
        configuration.limits.requestBodyTimeout = .seconds(requestBodyTimeout)
        configuration.limits.idleTimeout = .seconds(idleTimeout)
        configuration.databaseIdleTime = .seconds(databaseIdleTime)
        let node = try Node(directory: data.path, maximumDocumentSize: maximumDocumentSize, logger: logger)
        defer { node.close() }
        if (try? node.users.names())?.isEmpty ?? true, (try? node.peers.all())?.isEmpty ?? true {
            StandardStream.error.write("""
                warning: no users and no paired peers: clients can reach only databases opened to anonymous readers; \
                add a user with `syncd user add NAME --admin` or pair with `syncd pair`

                """)
        }
        let identity = node.identity
        let tlsEnabled = tls
        let listener = Listener(node: node, configuration: configuration, logger: logger)
        let socket = control.path(data: data)
        defer { unlink(socket) }
        let server = try listener.recordedService { record in
            var lines = record.urls.map { "listening on \($0)\n" }.joined()
            if tlsEnabled { lines += "node ID \(identity.id)\n" }
            StandardStream.output.write(lines)
        }
        // SIGTERM lets requests finish for 5 s, then cancels them; at 10 s the process ends regardless.
        var services = ServiceGroupConfiguration(
            services: [.init(service: server), .init(service: try listener.controlService(path: socket)),
                       .init(service: ShutdownDeadline(limit: .seconds(10), logger: logger), successTerminationBehavior: .ignore)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        services.maximumGracefulShutdownDuration = .seconds(5)
        let group = ServiceGroup(configuration: services)
        try await group.run()
    }
}
