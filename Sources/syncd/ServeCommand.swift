import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import Store
import SyncAgent

/// Serves the databases of the data directory over the CouchDB replication protocol until stopped.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the data directory's databases as a CouchDB-compatible HTTP(S) endpoint.",
        discussion: """
            Prints "listening on URL" once the socket is bound (port 0 picks a free port), then runs \
            until SIGTERM or SIGINT, finishing open requests before it exits.
            """
    )

    @OptionGroup var data: DataOptions

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "TCP port; 0 picks a free one.")
    var port = 5984

    @Flag(help: "Serve HTTPS with the node's self-signed certificate.")
    var tls = false

    @Flag(name: .customLong("require-auth"), help: "Refuse anonymous requests (users are added with `syncd user add`).")
    var requireAuth = false

    @Option(name: .customLong("max-request-size"), help: "Largest JSON request body in bytes.")
    var maximumRequestSize = 64 << 20

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel = "info"

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level \(logLevel)") }
    }

    func run() async throws {
        var logger = Logger(label: "syncd")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        let catalog = try Catalog(directory: data.path)
        defer { catalog.close() }
        let identity = try NodeIdentity.loadOrCreate(in: data.path)
        var configuration = ListenerConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.tls = tls
        configuration.requireAuthentication = requireAuth
        configuration.maximumRequestSize = maximumRequestSize
        let listener = Listener(catalog: catalog, identity: identity, users: UserStore(directory: data.path),
                                configuration: configuration, logger: logger)
        let tlsEnabled = tls
        let server = try listener.service { url in
            var line = "listening on \(url)\n"
            if tlsEnabled { line += "certificate sha256 fingerprint \(identity.fingerprint)\n" }
            FileHandle.standardOutput.write(Data(line.utf8))
        }
        // SIGTERM lets requests finish for 5 s, then cancels them; at 10 s the process ends regardless.
        var services = ServiceGroupConfiguration(
            services: [.init(service: server),
                       .init(service: ShutdownDeadline(limit: .seconds(10), logger: logger), successTerminationBehavior: .ignore)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        services.maximumGracefulShutdownDuration = .seconds(5)
        let group = ServiceGroup(configuration: services)
        try await group.run()
    }
}
