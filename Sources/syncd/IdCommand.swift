import ArgumentParser
import FoundationEssentials
import SyncAgent

/// Prints who this node is: what a peer pins and what a user shares.
struct IdCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "id",
        abstract: "Print this node's name, UUID, ID and listener URLs."
    )

    @OptionGroup var data: DataOptions

    func run() async throws {
        guard NodeIdentity.exists(in: data.path) else {
            StandardStream.error.write("no syncd node in \(data.path) yet: `syncd agent` or `syncd pair` makes one\n")
            throw ExitCode(1)
        }
        let identity = try NodeIdentity.loadOrCreate(in: data.path)
        let urls = ListenerRecord.current(in: data.path)?.urls ?? []
        print("""
            name    \(NodeName.of(directory: data.path))
            UUID    \(identity.uuid)
            ID      \(identity.id)
            URLs    \(urls.isEmpty ? "not listening (no syncd serves \(data.path))" : urls.joined(separator: " "))
            """)
    }
}
