import ArgumentParser
import SyncAgent

/// The process: logging and metrics set up once, then the command line.
@main
enum Entry {
    static func main() async {
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
        ],
        defaultSubcommand: InfoCommand.self
    )
}
