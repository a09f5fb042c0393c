import ArgumentParser

/// The `syncd` command line: a peer-to-peer JSON document sync agent.
@main
struct Syncd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "syncd",
        abstract: "Peer-to-peer JSON document sync agent.",
        subcommands: [
            InfoCommand.self,
            AdvertiseCommand.self,
            BrowseCommand.self,
            QRCommand.self,
            ServeCommand.self,
            UserCommand.self,
            ReplicateCommand.self,
        ],
        defaultSubcommand: InfoCommand.self
    )
}
