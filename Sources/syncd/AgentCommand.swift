import ArgumentParser
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
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
            following peers across address changes. Prints the node's name, ID and URLs, and, to a \
            terminal, a pairing QR code while it has no peers (an invitation is a secret: under systemd, \
            where the output goes to the journal, `syncd pair` makes one). Reads --config (default DATA/syncd.toml; see docs/configuration.md for \
            its keys); SIGHUP rereads it; SIGTERM or SIGINT stops after the replications checkpoint. \
            Other commands reach the agent through its control socket.
            """
    )

    @OptionGroup var data: DataOptions
    @OptionGroup var control: ControlOptions
    @OptionGroup var log: LogOptions

    @Option(help: "The configuration file (default: DATA/syncd.toml; missing means the defaults).")
    var config: String?

    @Flag(name: .customLong("show-invitation"),
          help: "Print a pairing invitation while the node has no peers even when the output is not a terminal (it holds a secret).")
    var showInvitation = false

    func run() async throws {
        let logger = log.logger(label: "syncd", defaultLevel: .notice)
        let configurationPath = config ?? data.path + "/syncd.toml"
        let agent: Agent
        do {
            agent = try Agent(directory: data.path, configurationPath: configurationPath,
                              controlSocket: control.path(data: data), logger: logger)
        } catch where error is ConfigurationError || error is StateFileError {
            // A configuration, or a users, peers or invitations file, that cannot be read.
            StandardStream.error.write("error: \(error)\n")
            throw ExitCode(78)  // EX_CONFIG
        }
        defer { agent.node.close() }
        let listening = ListeningPrinter(agent: agent, dataDirectory: data.path,
                                         showsInvitation: showInvitation || isatty(STDOUT_FILENO) != 0)
        // SIGHUP rereads the configuration.
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        let reloads = Task {
            for await _ in hangups {
                try? await agent.reload()  // a refusal is logged by the agent
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
/// node has no peers, an invitation to pair as a QR code. The invitation is a secret,
/// printed only where a person reads it (`showsInvitation`: a terminal, or when asked),
/// never into a log such as the journal.
private struct ListeningPrinter: Sendable {
    let agent: Agent
    let dataDirectory: String
    let showsInvitation: Bool

    func print(_ urls: [String]) async {
        let node = agent.node
        var text = """
            syncd agent \(SyncdVersion.current) on \(node.name)
            node ID \(node.identity.id)
            data in \(dataDirectory), control socket \(agent.controlSocket)

            """
        text += urls.map { "listening on \($0)\n" }.joined()
        let peers = (try? node.peers.all()) ?? []
        let shared = agent.configuration.databases.map(\.name)
        if peers.isEmpty, !shared.isEmpty, !showsInvitation {
            text += "\nNo peers yet: run `syncd pair` for an invitation to pair another machine (none is printed here: the output is no terminal).\n"
        } else if peers.isEmpty, !shared.isEmpty {
            do {
                let url = try await node.invite(databases: shared, lifetime: .seconds(600), introduce: true).url()
                text += "\nNo peers yet: to pair, use this invitation (`syncd pair` makes more).\n"
                text += try InvitationText.text(url, node: node.name, expiresIn: "10m", style: isatty(STDOUT_FILENO) != 0 ? .ansi : .plain)
            } catch {
                text += "\nNo peers yet, and no pairing invitation: \(error)\n"
            }
        } else {
            text += "\(peers.count) paired peer\(peers.count == 1 ? "" : "s"); sharing \(shared.joined(separator: ", "))\n"
        }
        StandardStream.output.write(text)
    }
}
