import ArgumentParser
import Foundation
import Logging
import QRCode
import ServiceLifecycle
import UnixSignals
import Store
import SyncAgent

/// Runs the agent: serves, advertises, browses, and keeps every paired peer in sync.
struct AgentCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agent",
        abstract: "Run the sync agent: serve, advertise, find peers, and keep shared databases in sync.",
        discussion: """
            Owns the data directory (a second agent on it refuses to start), serves it over HTTPS on the \
            LAN, advertises it with Avahi, and replicates every shared database with every paired peer, \
            following peers across address changes. Prints the node's name, ID and URLs, and a pairing \
            QR code while it has no peers. Reads --config (default DATA/syncd.toml; see the README for \
            its keys); SIGHUP rereads it; SIGTERM or SIGINT stops after the replications checkpoint. \
            Other commands reach the agent through its control socket.
            """
    )

    @OptionGroup var data: DataOptions
    @OptionGroup var control: ControlOptions
    @OptionGroup var log: LogOptions

    @Option(help: "The configuration file (default: DATA/syncd.toml; missing means the defaults).")
    var config: String?

    func run() async throws {
        let logger = log.logger(label: "syncd", defaultLevel: .notice)
        let configurationPath = config ?? data.path + "/syncd.toml"
        let agent: Agent
        do {
            agent = try Agent(directory: data.path, configurationPath: configurationPath,
                              controlSocket: control.path(data: data), logger: logger)
        } catch let error as ConfigurationError {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            throw ExitCode(78)  // EX_CONFIG
        }
        defer { agent.node.close() }
        let listening = ListeningPrinter(agent: agent, dataDirectory: data.path)
        // SIGHUP rereads the configuration.
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        let reloads = Task {
            for await _ in hangups {
                do { try agent.reload() } catch { logger.error("configuration not reloaded: \(error)") }
            }
        }
        defer { reloads.cancel() }
        var services = ServiceGroupConfiguration(
            services: [.init(service: AgentService(agent: agent, onListening: listening.print)),
                       .init(service: ShutdownDeadline(limit: .seconds(10), logger: logger), successTerminationBehavior: .ignore)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        services.maximumGracefulShutdownDuration = .seconds(8)
        try await ServiceGroup(configuration: services).run()
    }
}

/// The agent as a service that tells `onListening` where it listens.
private struct AgentService: Service {
    let agent: Agent
    let onListening: @Sendable ([String]) async -> Void
    func run() async throws { try await agent.run(onListening: onListening) }
}

/// What a new user needs once the agent listens: name, ID, URLs, and while the
/// node has no peers, an invitation to pair as a QR code.
private struct ListeningPrinter: Sendable {
    let agent: Agent
    let dataDirectory: String

    func print(_ urls: [String]) async {
        let listener = agent.node.listener
        var text = """
            syncd agent \(SyncdVersion.current) on \(listener.name)
            node ID \(listener.identity.id)
            data in \(dataDirectory), control socket \(agent.controlSocket)

            """
        text += urls.map { "listening on \($0)\n" }.joined()
        let peers = (try? listener.peers.all()) ?? []
        let shared = agent.configuration.databases.map(\.name)
        if peers.isEmpty, !shared.isEmpty, let host = Self.invitationHost(agent.configuration.listenHost),
           let port = urls.first.flatMap({ $0.split(separator: ":").last }).flatMap({ Int($0) }) {
            do {
                let (_, secret) = try listener.invitations.create(databases: shared, lifetime: .seconds(600))
                let url = InvitationURL(host: host, port: port, databases: shared, id: listener.identity.id, secret: secret)
                let code = try QRCode(url.codeText)
                text += "\nNo peers yet. To pair, scan this code on the other machine, or run there: syncd pair '\(url)'\n"
                text += code.terminalText(style: isatty(STDOUT_FILENO) != 0 ? .ansi : .plain) + "\n"
                text += url.description + "\n"
                text += "This invitation shares \(shared.joined(separator: ", ")), works once, and expires in 10 minutes (syncd pair makes another).\n"
            } catch {
                text += "(no pairing invitation: \(error))\n"
            }
        } else {
            text += "\(peers.count) paired peer\(peers.count == 1 ? "" : "s"); sharing \(shared.joined(separator: ", "))\n"
        }
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    /// The address to put in an invitation: the listener's own, or the first LAN address when it listens on all.
    static func invitationHost(_ listenHost: String) -> String? {
        ["::", "[::]", "0.0.0.0"].contains(listenHost) ? LocalAddresses.lan().first : listenHost
    }
}
