import ArgumentParser
import SyncAgent

/// The `syncd` command line: a peer-to-peer JSON document sync agent.
@main
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
