import ArgumentParser
import Glibc
import QueryServer
import SyncAgent

/// The process: logging and metrics set up once, then the command line. `syncd query-server`
/// is not a command for people: it is how the agent runs design documents' JavaScript, in a
/// process of its own (see ``QueryServers``), and it starts nothing else.
@main
enum Entry {
    static func main() async {
        // What syncd creates is its user's alone from the moment it exists: data files, and the
        // control socket, which is bound with this mask and only then opened to the group
        // (0660), never open to all for an instant whatever umask it was started with.
        umask(0o077)
        if CommandLine.arguments.dropFirst().first == "query-server" {
            exit(QueryServerLoop.run())
        }
        SyncdLogHandler.bootstrap()
        SyncdMetrics.bootstrap()
        await Syncd.main()
    }
}

/// The `syncd` command line: a peer-to-peer JSON document sync agent.
struct Syncd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "syncd",
        abstract: "Peer-to-peer JSON document sync agent.",
        version: SyncdVersion.current,
        subcommands: [
            AgentCommand.self,
            StatusCommand.self,
            ReloadCommand.self,
            InfoCommand.self,
            IdCommand.self,
            PairCommand.self,
            PeersCommand.self,
            ServeCommand.self,
            ReplicateCommand.self,
            UserCommand.self,
            BrowseCommand.self,
            AdvertiseCommand.self,
            QRCommand.self,
        ]
    )

    @OptionGroup var data: DataOptions
    @OptionGroup var control: ControlOptions

    /// Bare `syncd`: the running agent's status, else a short usage naming the
    /// commands a new user needs. It creates nothing.
    func run() async throws {
        do {
            _ = try await ControlClient(socketPath: control.path(data: data)).status()
        } catch ControlClient.Failure.noAgent {
            print("""
                syncd keeps JSON document databases the same on the machines of a LAN.
                No agent is running for \(data.path).

                  syncd agent       run the agent (it prints a QR code to pair another machine)
                  syncd pair URL    pair with another machine's agent from its invitation
                  syncd status      show what the running agent is doing

                See 'syncd --help' for every command.
                """)
            return
        } catch {}
        let options = (data.directory.map { ["--data", $0] } ?? []) + (control.path.map { ["--control-socket", $0] } ?? [])
        let status = try StatusCommand.parse(options)
        try await status.run()
    }
}
