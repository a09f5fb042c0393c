import ArgumentParser
import Foundation
import SyncAgent

/// Prints who this node is: what a peer pins and what a user shares.
struct IdCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "id",
        abstract: "Print this node's name, UUID, ID and listener URLs."
    )

    @OptionGroup var data: DataOptions

    func run() async throws {
        let identity = try NodeIdentity.loadOrCreate(in: data.path)
        let urls = ListenerRecord.current(in: data.path)?.urls ?? []
        print("""
            name    \(NodeName.current)
            UUID    \(identity.uuid)
            ID      \(identity.id)
            URLs    \(urls.isEmpty ? "not listening (no syncd serves \(data.path))" : urls.joined(separator: " "))
            """)
    }
}
